"""``mcp.json`` loading: the common format, Ishiki's keys, ``${VAR}``, selection, and errors that say where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ishiki_ext_mcp import MCPExtension, load_mcp_config
from ishiki_ext_mcp.config import DEFAULT_STARTUP_TIMEOUT_MS, DEFAULT_TIMEOUT_MS, ServerSpec


def write(directory: Path, servers: Any, name: str = "mcp.json") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps({"mcpServers": servers}, indent=2) if not isinstance(servers, str) else servers)
    return path


def test_stdio_and_http_servers_with_defaults(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "files": {"command": "npx", "args": ["-y", "server-files", "/srv"], "env": {"A": "1"}, "cwd": "work"},
            "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}},
            "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
            "strict": {"command": "srv", "trust": "owner", "timeout_ms": 1500, "startup_timeout_ms": 9000},
        },
    )
    config = load_mcp_config(tmp_path, environ={})
    assert config.file == tmp_path / "mcp.json"
    assert (config.errors, dict(config.failed), config.warnings) == ((), {}, ())
    files, remote, legacy, strict = config.servers
    assert files == ServerSpec(
        "files",
        "stdio",
        "mcp.json",
        command="npx",
        args=("-y", "server-files", "/srv"),
        env={"A": "1"},
        cwd=tmp_path / "work",
    )
    assert (files.trust, files.timeout_ms, files.startup_timeout_ms) == (
        "trusted",
        DEFAULT_TIMEOUT_MS,
        DEFAULT_STARTUP_TIMEOUT_MS,
    )
    assert (remote.transport, remote.url, dict(remote.headers)) == (
        "http",
        "https://mcp.example.com/mcp",
        {"Authorization": "Bearer x"},
    )
    assert legacy.transport == "sse"
    assert (strict.trust, strict.timeout, strict.startup_timeout) == ("owner", 1.5, 9.0)
    assert files.describe() == "npx -y server-files /srv"
    assert remote.describe() == "http https://mcp.example.com/mcp"


def test_variables_are_expanded_in_every_string_of_a_server(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "s": {"command": "${BIN}", "args": ["--root", "${ROOT:-/data}"], "env": {"TOKEN": "${TOKEN}"}},
            "h": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X": "$${literal}"}},
        },
    )
    config = load_mcp_config(tmp_path, environ={"BIN": "/usr/bin/srv", "TOKEN": "t0k", "HOST": "example.org"})
    stdio, http = config.servers
    assert (stdio.command, stdio.args, dict(stdio.env)) == ("/usr/bin/srv", ("--root", "/data"), {"TOKEN": "t0k"})
    assert http.url == "https://example.org/mcp"
    assert dict(http.headers) == {"Authorization": "Bearer t0k", "X": "${literal}"}


def test_a_missing_variable_fails_its_server_and_names_the_variable_and_file(tmp_path: Path) -> None:
    write(
        tmp_path, {"a": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${NOPE}"}}, "b": {"command": "x"}}
    )
    config = load_mcp_config(tmp_path, environ={})
    assert [spec.name for spec in config.servers] == ["b"]
    assert config.failed["a"].describe() == (
        "mcp.json:6: mcpServers.a.headers.Authorization: environment variable NOPE is not set "
        "(write ${NOPE:-default} to give a default)"
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({}, "mcpServers.x: a server needs 'command' (stdio) or 'url' (HTTP)"),
        ({"type": "stdio", "url": "http://h/mcp"}, "mcpServers.x: a stdio server needs 'command'"),
        ({"command": "c", "headers": {"a": "b"}}, "mcpServers.x.headers: 'headers' does not apply to a stdio server"),
        ({"url": "http://h/mcp", "env": {}}, "mcpServers.x.env: 'env' does not apply to a http server"),
        ({"url": "ftp://h"}, "mcpServers.x.url: expected an http:// or https:// URL"),
        (
            {"command": "c", "trust": "root"},
            "mcpServers.x.trust: must be one of 'untrusted', 'trusted', 'owner'; got 'root'",
        ),
        ({"command": "c", "timeout_ms": 0}, "mcpServers.x.timeout_ms: must be >= 1; got 0"),
        ({"command": "c", "args": "a b"}, "mcpServers.x.args: expected an array, got string ('a b')"),
        ({"command": "c", "env": {"N": 1}}, "mcpServers.x.env.N: expected a string, got integer (1)"),
        (
            {"command": "c", "type": "websocket"},
            "mcpServers.x.type: must be one of 'stdio', 'http', 'streamable-http', 'sse'; got 'websocket'",
        ),
    ],
)
def test_a_bad_entry_fails_that_server_with_its_key_path(tmp_path: Path, entry: dict[str, Any], message: str) -> None:
    write(tmp_path, {"x": entry, "ok": {"command": "c"}})
    config = load_mcp_config(tmp_path, environ={})
    assert [spec.name for spec in config.servers] == ["ok"]
    assert config.failed["x"].path + ": " + config.failed["x"].message == message
    assert config.failed["x"].file == "mcp.json"


def test_unknown_keys_are_warnings_with_a_hint(tmp_path: Path) -> None:
    write(tmp_path, {"x": {"command": "c", "autoApprove": ["a"], "timeoutMS": 5}})
    config = load_mcp_config(tmp_path, environ={})
    assert [spec.name for spec in config.servers] == ["x"]
    assert config.warnings == (
        "mcp.json:5: mcpServers.x.autoApprove: unknown key 'autoApprove' (ignored)",
        "mcp.json:8: mcpServers.x.timeoutMS: unknown key 'timeoutMS' (ignored); did you mean 'timeout_ms'?",
    )


def test_ishikis_own_keys_in_their_old_spelling_work_with_a_warning(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "x": {"command": "c", "timeoutMs": 5, "startupTimeoutMs": 7},
            "y": {"command": "c", "timeoutMs": 1, "timeout_ms": 2},
        },
    )
    config = load_mcp_config(tmp_path, environ={})
    (spec,) = config.servers
    assert (spec.timeout_ms, spec.startup_timeout_ms) == (5, 7)
    assert config.warnings == (
        "mcp.json:5: mcpServers.x.timeoutMs: `timeoutMs` is the old spelling; write `timeout_ms`",
        "mcp.json:6: mcpServers.x.startupTimeoutMs: `startupTimeoutMs` is the old spelling; write `startup_timeout_ms`",
    )
    assert "`timeoutMs` and `timeout_ms` are one key written twice" in config.failed["y"].message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"mcpServers": {', "mcp.json:1: mcpServers: invalid JSON: the file ends inside an object opened at line 1"),
        ('{"mcpServers": ' + '{"a": ' * 50_000, "mcp.json:1: invalid JSON: nested deeper than 64 levels"),
        (
            '{"mcpServers": {"a": {"timeout_ms": 1' + "0" * 5000 + "}}}",
            "mcp.json:1: mcpServers.a.timeout_ms: invalid JSON: an integer of 5,001 digits",
        ),
        ('{"mcpServers": {"a": {"command": "caf\\udce9"}}}', "mcp.json:1: invalid JSON: a lone UTF-16 surrogate"),
        ("[]", "mcp.json:1: expected an object, got array"),
        ('{"servers": {}}', "mcp.json:1: missing required key 'mcpServers'"),
        ('{"mcpServers": {"a/b": {"command": "c"}}}', "mcp.json:1: mcpServers.a/b: a server name is 1-64 letters"),
        ("\0", "mcp.json: binary file (contains NUL bytes), expected UTF-8 text"),
    ],
)
def test_a_broken_file_is_one_error_and_no_server(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "mcp.json").write_text(text)
    config = load_mcp_config(tmp_path, environ={})
    assert config.servers == ()
    assert len(config.errors) == 1
    assert config.errors[0].describe().startswith(message)


def test_a_file_that_is_not_utf8_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_bytes(b'{"mcpServers": {"a": {"command": "caf\xe9"}}}')
    config = load_mcp_config(tmp_path, environ={})
    assert [e.describe() for e in config.errors] == ["mcp.json:1: not UTF-8 text (byte 0xe9 at offset 37)"]


def test_a_duplicate_key_is_an_error_and_the_last_value_is_used(tmp_path: Path) -> None:
    write(tmp_path, '{"mcpServers": {"a": {"command": "one",\n "command": "two"}}}')
    config = load_mcp_config(tmp_path, environ={})
    assert [e.describe() for e in config.errors] == [
        "mcp.json:2: mcpServers.a.command: duplicate key 'command' (first at line 1)"
    ]
    assert [s.command for s in config.servers] == ["two"]


def test_selection_and_profile_local_file(tmp_path: Path) -> None:
    write(tmp_path, {"a": {"command": "a"}, "b": {"command": "b"}, "off": {"command": "o", "disabled": True}})
    profile = tmp_path / "profiles" / "p"
    profile.mkdir(parents=True)
    assert [s.name for s in load_mcp_config(tmp_path, profile, ["b"], environ={}).servers] == ["b"]
    everything = load_mcp_config(tmp_path, profile, environ={})
    assert ([s.name for s in everything.servers], everything.disabled) == (["a", "b"], ("off",))
    write(profile, {"own": {"command": "own"}})
    local = load_mcp_config(tmp_path, profile, environ={})
    assert (local.file, [s.name for s in local.servers]) == (profile / "mcp.json", ["own"])
    missing = load_mcp_config(tmp_path, profile, ["a"], environ={})
    assert missing.errors[0].describe() == (
        "extends.mcp.config.servers: no server 'a' in profiles/p/mcp.json (servers: own)"
    )


def test_no_file(tmp_path: Path) -> None:
    assert load_mcp_config(tmp_path, environ={}).file is None
    selected = load_mcp_config(tmp_path, None, ["x"], environ={})
    assert selected.errors[0].describe() == "mcp.json: no mcp.json found, but servers ['x'] are selected"


def test_equal_specs_share_a_fingerprint_and_secrets_stay_out_of_describe(tmp_path: Path) -> None:
    write(tmp_path, {"a": {"command": "c", "env": {"T": "1"}}, "b": {"command": "c", "env": {"T": "1"}}})
    a, b = load_mcp_config(tmp_path, environ={}).servers
    assert a.fingerprint() == b.fingerprint()
    write(tmp_path, {"a": {"command": "c", "env": {"T": "2"}}})
    (changed,) = load_mcp_config(tmp_path, environ={}).servers
    assert changed.fingerprint() != a.fingerprint()
    assert "2" not in changed.describe()


def test_the_extension_schema_accepts_a_selection_only() -> None:
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(dict(MCPExtension.config_schema))
    assert validator.is_valid({"servers": ["a", "b"]})
    assert validator.is_valid({})
    assert not validator.is_valid({"servers": ["a", "a"]})
    assert not validator.is_valid({"sever": ["a"]})
