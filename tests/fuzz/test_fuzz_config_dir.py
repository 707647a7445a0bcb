"""A whole config directory of mangled YAML loads into classified errors, never a crash.

The repository's own example files (``ishiki.yaml``, ``models.yaml``, ``profiles/example/profile.yml``, which
use every key) are mutated the way hand edits break YAML: a span deleted, a fragment inserted (indentation,
tabs, flow brackets, anchors and aliases, tags, ``${VAR}`` references, unicode), a line duplicated. The host's
own loader (``load_config_dir``, what ``ishiki check`` and ``ishiki run`` call) must return a ``ConfigDir`` whose
every problem is a ``ConfigError`` naming its file, or raise a ``ConfigError``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ishiki_host.errors import ConfigError
from ishiki_host.plugins.configdir import load_config_dir
from ishiki_host.plugins.discovery import discover

REPO = Path(__file__).resolve().parents[2]
FILES = {
    "ishiki.yaml": (REPO / "ishiki.yaml").read_text("utf-8"),
    "models.yaml": (REPO / "models.yaml").read_text("utf-8"),
    "profiles/example/profile.yml": (REPO / "profiles/example/profile.yml").read_text("utf-8"),
}
REGISTRY = discover()
FRAGMENTS = ["  ", "\t", "- ", ": ", ":", "{", "}", "[", "]", ",", "&a ", "*a", "<<: *a", "!!python/object ",
             "!!binary ", "${X}", "${X:-", "'", '"', "#", "\n", "\n  - x", "key: value\n", "? ", "|", ">", "%YAML 1.1",
             "---\n", "...\n", "~", "null", "1e999", "0x10", "é", "\ufeff", "\x00", "😀"]  # fmt: skip


@st.composite
def mangled(draw: st.DrawFn, text: str) -> str:
    """``text`` after a few hand-edit accidents."""
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.integers(0, len(text)))
        match draw(st.sampled_from(["delete", "insert", "duplicate"])):
            case "delete":
                text = text[:where] + text[where + draw(st.integers(1, 40)) :]
            case "insert":
                text = text[:where] + draw(st.sampled_from(FRAGMENTS) | st.text(max_size=6)) + text[where:]
            case _:
                lines = text.splitlines(keepends=True) or [""]
                line = draw(st.integers(0, len(lines) - 1))
                text = "".join(lines[: line + 1] + lines[line:])
    return text


documents = st.sampled_from(sorted(FILES)).flatmap(lambda name: st.tuples(st.just(name), mangled(FILES[name])))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(documents, min_size=1, max_size=3))
def test_mangled_config_files_give_classified_errors(mangled_files: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory(prefix="ishiki-fuzz-config-") as base:
        root = Path(base) / "bot"
        for name, text in {**FILES, **dict(mangled_files)}.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, "utf-8")
        (root / "profiles" / "example" / "persona.md").write_text("You are a test.\n", "utf-8")
        (root / "demo.rules.yaml").write_text((REPO / "demo.rules.yaml").read_text("utf-8"), "utf-8")
        try:
            config = load_config_dir(root, env={"X": "1"}, registry=REGISTRY)
        except ConfigError as exc:
            problems = [exc]
        else:
            problems = [*config.host_errors, *config.models_errors, *(e for p in config.profiles for e in p.errors)]
        event(f"{'some' if problems else 'no'} problems")
        for problem in problems:
            assert isinstance(problem, ConfigError)
            assert problem.message
            assert problem.file, problem  # every problem says which file it is about
