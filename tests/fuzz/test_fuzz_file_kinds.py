"""Every kind of file the host reads, mangled byte by byte: its loader raises only its ``ConfigError``, and
``ishiki check --json`` always prints one JSON object.

The kinds: ``ishiki.yaml``, ``models.yaml``, a ``profile.yml``, the scripted model's rules file, a skill's
``SKILL.md``, ``heartbeats.json`` and ``mcp.json``. Each starts from a seed that uses its keys (the
repository's own example files, where it has them) and goes through a few accidents, as bytes: a span
deleted, a line duplicated, a fragment inserted. The fragments are the syntax of YAML and JSON and the
hazards that used to crash the host: nesting 600 and 5,000 deep, a 5,000-digit integer, a Latin-1 byte, a
NUL, a BOM, an invalid UTF-8 sequence, an alias bomb, ``NaN`` and ``1e999``, lone surrogate escapes.

The examples are the same on every run: the repository's ``ci`` Hypothesis profile derandomizes (each test's
seed is a digest of the test itself) and keeps no example database; ``max_examples`` bounds each test, so
the module takes a few seconds. ``--hypothesis-profile=explore`` searches further.

Found with it (each now a test of its own): a ``SKILL.md`` front matter nested 600 deep, ``heartbeats.json``
nested 100,000 deep or holding a 5,000-digit integer, a rules file with a Latin-1 byte, deep nesting or a
huge integer, and ``mcp.json`` likewise: each raised ``RecursionError``, ``ValueError`` or
``UnicodeDecodeError`` out of its loader (``ishiki check --json`` printed a traceback and no JSON).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from ishiki_ext_mcp import load_mcp_config
from ishiki_ext_mcp.errors import MCPConfigInvalid

from ishiki_host.cli import main
from ishiki_host.config.yamlio import load_yaml
from ishiki_host.errors import ConfigError, HeartbeatInvalid, HostConfigInvalid, ModelsConfigInvalid, SkillInvalid
from ishiki_host.gateway.providers.scripted import load_rules
from ishiki_host.heartbeat.beatfile import parse_beat_file, read_beat_file_sync
from ishiki_host.memory.skills import scan_skills

REPO = Path(__file__).resolve().parents[2]
SKILL = "skills/brew-tea/SKILL.md"
SEEDS: dict[str, bytes] = {
    "ishiki.yaml": (REPO / "ishiki.yaml").read_bytes(),
    "models.yaml": (REPO / "models.yaml").read_bytes(),
    "profiles/example/profile.yml": (REPO / "profiles/example/profile.yml")
    .read_bytes()
    .replace(b"extends: {}", b"extends:\n  mcp: {config: {servers: [files]}}"),
    "demo.rules.yaml": (REPO / "demo.rules.yaml").read_bytes(),
    SKILL: b"---\nname: brew-tea\ndescription: How to brew tea.\ntags: [tea, 'hot drinks']\n---\n# Brewing\n1. Boil.\n",
    "heartbeats.json": json.dumps(
        [
            {"id": "standup", "text": "Ask for updates.", "cron": "0 10 * * 1-5", "type": "task",
             "timezone": "Europe/Berlin", "target": {"profile": "example", "sid": "console:local",
                                                     "channel": "private:local"}},
            {"id": "passport", "text": "Renew it.", "cron": "0 9 15 3 *", "type": "reminder", "recurring": False,
             "target": {"profile": "example", "sid": "console:local", "channel": "private:local"}},
            {"id": "__clear_images__", "text": "30d", "cron": "0 3 * * *"},
        ],
        indent=2,
    ).encode(),
    "mcp.json": json.dumps(
        {"mcpServers": {"files": {"command": "npx", "args": ["-y", "srv"], "env": {"A": "${X:-1}"}, "timeoutMs": 500},
                        "web": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}}}},
        indent=2,
    ).encode(),
}  # fmt: skip
HAZARDS = [
    b"[" * 600, b"{" * 600, b'{"a": ' * 5000, b"[" * 5000 + b"]" * 5000, b"- " * 600, b"9" * 5000, b"-" + b"9" * 200,
    b"0x" + b"f" * 300, b"1:" * 300 + b"1", b"\xe9", b"\xff\xfe", b"\x00", b"\xef\xbb\xbf", b"\xed\xa0\x80",
    b"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
    b"NaN", b"-Infinity", b"1e999", b'"\\ud800"', b'"\\udfff\\ud800"', b"\\u0000", "😀".encode(), b"\r\n",
]  # fmt: skip
SYNTAX = [
    b"  ", b"\t", b"- ", b": ", b":", b"{", b"}", b"[", b"]", b",", b'"', b"'", b"#", b"\n", b"&a ", b"*a",
    b"<<: *a", b"!!python/object ", b"!!binary ", b"${X}", b"${X:-", b"---\n", b"...\n", b"~", b"null", b"true",
    b"? ", b"|", b">", b"%YAML 1.1\n", b'"id": ', b'"id": "x", ', b"{}", b"[]", b"0", b"-0.5e-3",
]  # fmt: skip
VALUES = [
    b"[" * 600 + b"]" * 600, b"[" * 5000 + b"]" * 5000, b'{"a": ' * 700 + b"1" + b"}" * 700, b"9" * 5000,
    b"-" + b"9" * 5000 + b".5e3", b"0x" + b"f" * 300, b'"\\ud800"', b"NaN", b"1e999",
]  # fmt: skip
"""Well-formed values that used to crash a loader, put where a value goes (after ``: ``, ``- ``, ``[``)."""
_VALUE_AT = re.compile(rb": |- |\[")
fragments = st.one_of(
    st.sampled_from(HAZARDS), st.sampled_from(HAZARDS), st.sampled_from(SYNTAX), st.binary(max_size=6)
)


@st.composite
def mangled(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` after one to four accidents."""
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(range(len(data) + 1)))  # uniform: integers() favours the two ends
        match draw(st.sampled_from(["delete", "insert", "insert", "duplicate", "value"])):
            case "delete":
                data = data[:where] + data[where + draw(st.integers(1, 40)) :]
            case "insert":
                data = data[:where] + draw(fragments) + data[where:]
            case "value" if starts := [m.end() for m in _VALUE_AT.finditer(data)]:
                at = draw(st.sampled_from(starts))
                data = data[:at] + draw(st.sampled_from(VALUES)) + data[at:]
            case _:
                lines = data.splitlines(keepends=True) or [b""]
                line = draw(st.integers(0, len(lines) - 1))
                data = b"".join(lines[: line + 1] + lines[line:])
    return data


def kind(name: str) -> st.SearchStrategy[bytes]:
    return mangled(SEEDS[name])


def only(error: type[ConfigError], load: Callable[[], object]) -> None:
    """Run ``load``: it returns, or raises ``error`` naming a file. Anything else escapes and fails the test."""
    try:
        load()
    except error as exc:
        failure: ConfigError = exc
    else:
        event("loaded")
        return
    assert failure.file, failure
    event(f"{error.__name__}: {_gist(failure.message)}")


def _gist(message: str) -> str:
    """The kind of a message, for the statistics: ``nested deeper than 64 levels``, ``duplicate key``."""
    return message.removeprefix("not valid JSON: ").split("(")[0].split(":")[0].split("'")[0][:30].strip()


def in_dir(files: dict[str, bytes], body: Callable[[Path], None]) -> None:
    with tempfile.TemporaryDirectory(prefix="ishiki-fuzz-files-") as base:
        root = Path(base) / "bot"
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        body(root)


FAST = settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(kind("ishiki.yaml") | kind("models.yaml") | kind("profiles/example/profile.yml"))
def test_config_yaml_loads_or_fails_with_a_config_error(data: bytes) -> None:
    def body(root: Path) -> None:
        only(HostConfigInvalid, lambda: load_yaml(root / "f.yaml", "f.yaml", HostConfigInvalid, {"X": "1"}))

    in_dir({"f.yaml": data}, body)


@FAST
@given(kind("demo.rules.yaml"))
def test_a_rules_file_loads_or_fails_with_a_models_error(data: bytes) -> None:
    in_dir(
        {"demo.rules.yaml": data},
        lambda root: only(ModelsConfigInvalid, lambda: load_rules("demo.rules.yaml", str(root))),
    )


@FAST
@given(kind(SKILL))
def test_a_skill_loads_or_is_skipped_with_a_skill_error(data: bytes) -> None:
    def body(root: Path) -> None:
        scan = scan_skills(root)  # never raises
        assert len(scan.files) + len(scan.errors) == 1
        for error in scan.errors:
            assert isinstance(error, SkillInvalid)
            assert error.file == SKILL
            event(f"skipped: {_gist(error.message)}")
        if scan.files:
            event("loaded")

    in_dir({SKILL: data}, body)


@FAST
@given(kind("heartbeats.json"))
def test_heartbeats_json_loads_or_fails_with_a_heartbeat_error(data: bytes) -> None:
    def load(root: Path) -> None:
        text = read_beat_file_sync(root / "heartbeats.json")
        assert text is not None
        parsed = parse_beat_file(text, file="heartbeats.json", default_tz="UTC", now=1_717_200_000.0)
        assert all(isinstance(error, HeartbeatInvalid) and error.file for error in parsed.errors)

    in_dir({"heartbeats.json": data}, lambda root: only(HeartbeatInvalid, lambda: load(root)))


@FAST
@given(kind("mcp.json"))
def test_mcp_json_never_raises(data: bytes) -> None:
    def body(root: Path) -> None:
        config = load_mcp_config(root, environ={})  # "never raises for bad content"
        problems = [*config.errors, *config.failed.values()]
        assert all(isinstance(p, MCPConfigInvalid) and p.file for p in problems)
        event(f"{len(config.servers)} servers, {'some' if problems else 'no'} problems")

    in_dir({"mcp.json": data}, body)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(sorted(SEEDS)), st.none(), min_size=1, max_size=3).flatmap(
    lambda chosen: st.fixed_dictionaries({name: kind(name) for name in chosen})
))  # fmt: skip
def test_ishiki_check_json_always_prints_one_json_object(mangled_files: dict[str, bytes]) -> None:
    files = {**SEEDS, "profiles/example/persona.md": b"You are a test.\n", **mangled_files}

    def body(root: Path) -> None:
        for argv in (["check", str(root), "--json"], ["check", str(root)]):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)  # what escapes here is the traceback a user would see
            assert code in (0, 1, 2), err.getvalue()
            out.getvalue().encode("utf-8")  # a real stdout is strict UTF-8: no lone surrogate may reach it
            if "--json" in argv:
                report = json.loads(out.getvalue())
                assert isinstance(report["ok"], bool)
                event(f"exit {code}")

    in_dir(files, body)
