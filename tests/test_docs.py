"""Documentation is executable: generated references are current, snippets are valid, example profiles load."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import yaml

from ishiki_host.config.host import host_from_document
from ishiki_host.config.models_loader import models_from_document
from ishiki_host.config.profile import profile_from_document
from ishiki_host.config.reference import PAGES, render_page
from ishiki_host.config.yamlio import parse_yaml
from ishiki_host.errors import HostConfigInvalid, ModelsConfigInvalid, ProfileInvalid
from ishiki_host.gateway.providers.scripted import load_rules
from ishiki_host.plugins.configdir import load_config_dir
from ishiki_host.plugins.discovery import discover
from ishiki_host.plugins.reference import render_builtins, render_hookspecs

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


class AnyEnv(Mapping[str, str]):
    """An environment in which every variable is set: credentials to a sample value, others empty.

    ``${VAR}`` expands and ``${VAR:-default}`` falls back to its default; a credential (a name ending in
    TOKEN, KEY or SECRET) gets a well-formed sample so the channel or provider schema that checks it is satisfied.
    """

    def __getitem__(self, key: str) -> str:
        return "123456:sample-credential" if key.endswith(("TOKEN", "KEY", "SECRET")) else ""

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def snippets(language: str) -> list[tuple[str, str]]:
    """``(where, code)`` of every fenced block of ``language`` in docs/ and the README."""
    found = []
    for path in [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for match in FENCE.finditer(path.read_text(encoding="utf-8")):
            if match.group(1) == language:
                line = path.read_text(encoding="utf-8")[: match.start()].count("\n") + 1
                found.append((f"{path.relative_to(REPO)}:{line}", match.group(2)))
    return found


@pytest.mark.parametrize("name", list(PAGES))
def test_config_reference_is_current(name: str) -> None:
    committed = (DOCS / "reference" / PAGES[name]).read_text(encoding="utf-8")
    assert committed == render_page(name), "stale: run `make docs`"


def test_hookspecs_reference_is_current() -> None:
    assert (DOCS / "hookspecs.md").read_text(encoding="utf-8") == render_hookspecs(), "stale: run `make docs`"


def test_builtins_reference_is_current() -> None:
    assert (DOCS / "reference" / "builtins.md").read_text(encoding="utf-8") == render_builtins(), (
        "stale: run `make docs`"
    )


def test_every_hook_is_in_the_reference() -> None:
    text = (DOCS / "hookspecs.md").read_text(encoding="utf-8")
    for hook in ("ishiki_attach", "ishiki_tools", "ishiki_instructions", "ishiki_stop"):
        assert f"### `{hook}`" in text


YAML_SNIPPETS = snippets("yaml")


def test_there_are_yaml_snippets() -> None:
    kinds = {code.splitlines()[0].split(":")[0] for _, code in YAML_SNIPPETS}
    assert {"# profile.yml", "# models.yaml", "# ishiki.yaml"} <= kinds


@pytest.mark.parametrize(("where", "code"), YAML_SNIPPETS, ids=[w for w, _ in YAML_SNIPPETS])
def test_yaml_snippet_is_valid(where: str, code: str) -> None:
    kind = code.splitlines()[0].split(":")[0] if code.startswith("#") else ""
    registry = discover()
    if kind == "# profile.yml":
        doc = parse_yaml(code, where, ProfileInvalid)
        _, errors = profile_from_document("snippet", Path("profile.yml"), doc, "", registry)
    elif kind == "# models.yaml":
        _, errors = models_from_document(parse_yaml(code, where, ModelsConfigInvalid, AnyEnv()), registry)
    elif kind == "# ishiki.yaml":
        _, errors = host_from_document(Path("."), parse_yaml(code, where, HostConfigInvalid, AnyEnv()), registry)
    elif kind == "# scripted rules":
        load_rules(yaml.safe_load(code)["rules"], None, where=where)
        errors = []
    else:
        pytest.fail(
            f"{where}: a yaml snippet must start with '# profile.yml', '# models.yaml', '# ishiki.yaml'"
            " or '# scripted rules'"
        )
    assert [e.describe() for e in errors] == []


@pytest.mark.parametrize(("where", "code"), snippets("python"), ids=[w for w, _ in snippets("python")])
def test_python_snippet_runs(where: str, code: str) -> None:
    if "from __future__ import annotations" not in code:  # a whole module (a scaffold's) brings its own
        code = f"from __future__ import annotations\n{code}"
    compiled = compile(code, where, "exec")
    exec(compiled, {"__name__": "snippet"})


@pytest.mark.parametrize(("where", "code"), snippets("toml"), ids=[w for w, _ in snippets("toml")])
def test_toml_snippet_parses(where: str, code: str) -> None:
    tomllib.loads(code)


def test_example_profiles_load() -> None:
    config = load_config_dir(REPO, env={})
    assert config.host_errors == ()
    assert config.models_errors == ()
    assert {p.id for p in config.profiles} == {p.name for p in (REPO / "profiles").iterdir() if p.is_dir()}
    for state in config.profiles:
        assert state.state in ("ready", "waiting"), [e.describe() for e in state.errors]
        # until the gateway's model APIs are installed, only they may be missing
        assert all(name.startswith("ishiki.provider.") for name in state.missing), state.missing
        assert state.profile is not None
        assert state.profile.persona.strip()
