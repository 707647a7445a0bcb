"""``mcp.json``: the MCP servers a profile may use, in the common ``mcpServers`` format.

The file sits at the root of the config directory; a profile-local ``profiles/<id>/mcp.json`` replaces it
for that profile (it is not merged). The extension's ``servers: [names]`` selects some of the file's
servers (all of them when absent). A stdio server has ``command`` (and ``args``, ``env``, ``cwd``); an HTTP
server has ``url`` (and ``headers``); ``type`` (``stdio``, ``http``/``streamable-http``, ``sse``) is
inferred when left out. Ishiki adds ``trust`` (default ``trusted``), ``timeout_ms`` (one call),
``startup_timeout_ms`` (connect and list) and honours ``disabled``.

``${VAR}`` and ``${VAR:-default}`` are expanded (``ishiki_host.config.envvars``) in every string of a server
entry: command, args, env, cwd, url and headers. A problem with one server (a missing variable, a bad
value) fails that server only, with an ``MCPConfigInvalid`` naming the file and key path; the others load.
Unknown keys are warnings (configs are often copied from other MCP clients), with a "did you mean" hint.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ishiki_host import (
    TrustLevel,
    YamlDocument,
    did_you_mean,
    expand_vars,
    format_path,
    normalize_keys,
    parse_json,
    read_text,
    schema_problems,
)
from ishiki_host.errors import ConfigError

from ishiki_ext_mcp.errors import MCPConfigInvalid

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT_MS",
    "DEFAULT_TIMEOUT_MS",
    "MCP_FILE",
    "MCPConfig",
    "ServerSpec",
    "load_mcp_config",
]

MCP_FILE = "mcp.json"
DEFAULT_TIMEOUT_MS = 60_000
DEFAULT_STARTUP_TIMEOUT_MS = 30_000
Transport = Literal["stdio", "http", "sse"]

_TYPES: Mapping[str, Transport] = {"stdio": "stdio", "http": "http", "streamable-http": "http", "sse": "sse"}
_NAME = r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$"
_SERVER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"enum": list(_TYPES)},
        "command": {"type": "string", "minLength": 1},
        "args": {"type": "array", "items": {"type": "string"}},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "cwd": {"type": "string", "minLength": 1},
        "url": {"type": "string", "pattern": "^https?://", "x-error": "expected an http:// or https:// URL"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "trust": {"enum": ["untrusted", "trusted", "owner"]},
        "timeout_ms": {"type": "integer", "minimum": 1},
        "startup_timeout_ms": {"type": "integer", "minimum": 1},
        "disabled": {"type": "boolean"},
    },
}
_FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["mcpServers"],
    "properties": {
        "mcpServers": {
            "type": "object",
            "propertyNames": {
                "pattern": _NAME,
                "x-error": "a server name is 1-64 letters, digits, spaces, '_', '.' or '-', starting with a "
                "letter or digit",
            },
            "additionalProperties": {"type": "object"},
        }
    },
}
_STDIO_ONLY = ("command", "args", "env", "cwd")
_HTTP_ONLY = ("url", "headers")


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One usable server of ``mcp.json``, variables expanded and defaults applied."""

    name: str
    transport: Transport
    source: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    trust: TrustLevel = "trusted"
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    startup_timeout_ms: int = DEFAULT_STARTUP_TIMEOUT_MS

    @property
    def timeout(self) -> float:
        """The call timeout in seconds."""
        return self.timeout_ms / 1000

    @property
    def startup_timeout(self) -> float:
        """The startup timeout in seconds."""
        return self.startup_timeout_ms / 1000

    def fingerprint(self) -> str:
        """A digest of everything that makes the server process (two equal specs share one process)."""
        launch = {
            "transport": self.transport,
            "command": self.command,
            "args": list(self.args),
            "env": dict(sorted(self.env.items())),
            "cwd": str(self.cwd) if self.cwd else None,
            "url": self.url,
            "headers": dict(sorted(self.headers.items())),
            "startup": self.startup_timeout_ms,
        }
        return hashlib.sha256(json.dumps(launch, sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> str:
        """How the server is reached, without secrets (no env or header values)."""
        if self.transport == "stdio":
            return " ".join([str(self.command), *self.args])
        return f"{self.transport} {self.url}"


@dataclass(frozen=True, slots=True)
class MCPConfig:
    """What one profile gets: the file used, its usable servers, and what is wrong with the rest.

    ``failed`` maps a declared (or selected) server that cannot be used to its error; ``errors`` are
    problems of the whole file or selection; ``warnings`` are unknown keys; ``disabled`` names the servers
    the file turns off.
    """

    file: Path | None
    servers: tuple[ServerSpec, ...] = ()
    failed: Mapping[str, MCPConfigInvalid] = field(default_factory=dict)
    errors: tuple[MCPConfigInvalid, ...] = ()
    warnings: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()


def mcp_file(config_dir: Path, profile_dir: Path | None) -> Path:
    """The ``mcp.json`` a profile uses: its own when it has one, else the config directory's."""
    if profile_dir is not None and (profile_dir / MCP_FILE).is_file():
        return profile_dir / MCP_FILE
    return config_dir / MCP_FILE


def load_mcp_config(
    config_dir: Path,
    profile_dir: Path | None = None,
    selection: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> MCPConfig:
    """Load the profile's ``mcp.json`` and pick the ``selection`` (all servers when ``None``).

    Never raises for bad content: every problem is data in the returned ``MCPConfig``. The file is read by
    the host's hardened JSON loader (``ishiki_host.parse_json``): over 1 MiB, not UTF-8, nested deeper than 64
    levels or an integer of more than 100 digits is one error naming the file; a duplicate key is an error too,
    and the last value is used.
    """
    path = mcp_file(config_dir, profile_dir)
    display = _display(path, config_dir)
    if not path.exists():
        errors: tuple[MCPConfigInvalid, ...] = ()
        if selection:
            errors = (
                MCPConfigInvalid(f"no {MCP_FILE} found, but servers {list(selection)} are selected", file=display),
            )
        return MCPConfig(None, errors=errors)
    try:
        doc = _read(path, display)
    except ConfigError as exc:
        return MCPConfig(path, errors=(_as_mcp_error(exc),))
    top = [_as_mcp_error(e) for e in schema_problems(_FILE_SCHEMA, doc.data, doc, MCPConfigInvalid)]
    if top:
        return MCPConfig(path, errors=tuple(top))
    declared: dict[str, Any] = doc.data["mcpServers"]
    loaded = _Loader(doc, path.parent, os.environ if environ is None else environ)
    names, selection_errors = _select(declared, selection, doc)
    for name in names:
        loaded.server(name, declared[name])
    return MCPConfig(
        path,
        servers=tuple(loaded.servers),
        failed=loaded.failed,
        errors=(*(_as_mcp_error(e) for e in doc.errors), *selection_errors),
        warnings=tuple(loaded.warnings),
        disabled=tuple(loaded.disabled),
    )


def _display(path: Path, config_dir: Path) -> str:
    try:
        return str(path.relative_to(config_dir))
    except ValueError:
        return str(path)


def _as_mcp_error(exc: ConfigError) -> MCPConfigInvalid:
    if isinstance(exc, MCPConfigInvalid):
        return exc
    return MCPConfigInvalid(exc.message, file=exc.file, line=exc.line, path=exc.path)


def _read(path: Path, display: str) -> YamlDocument:
    """The file as strict JSON with the line of every key, read by the host's hardened loader (size, encoding,
    nesting, integer limits): a bad file is one ``MCPConfigInvalid`` naming it, never a crash."""
    text = read_text(path, display, MCPConfigInvalid)
    try:
        return parse_json(text, display, MCPConfigInvalid)
    except MCPConfigInvalid as exc:
        raise MCPConfigInvalid(f"invalid JSON: {exc.message}", file=exc.file, line=exc.line, path=exc.path) from exc


def _select(
    declared: Mapping[str, Any], selection: Sequence[str] | None, doc: YamlDocument
) -> tuple[list[str], list[MCPConfigInvalid]]:
    if selection is None:
        return list(declared), []
    errors = []
    for name in selection:
        if name not in declared:
            known = ", ".join(declared) or "none"
            message = f"no server '{name}' in {doc.file}{did_you_mean(name, declared)} (servers: {known})"
            errors.append(MCPConfigInvalid(message, path="extends.mcp.config.servers"))
    return [name for name in selection if name in declared], errors


class _Loader:
    """Turns ``mcpServers`` entries into specs, collecting each server's problems."""

    def __init__(self, doc: YamlDocument, base: Path, environ: Mapping[str, str]):
        self.doc, self.base, self.environ = doc, base, environ
        self.servers: list[ServerSpec] = []
        self.failed: dict[str, MCPConfigInvalid] = {}
        self.warnings: list[str] = []
        self.disabled: list[str] = []

    def error(self, message: str, *path: str | int) -> MCPConfigInvalid:
        full = ("mcpServers", *path)
        return MCPConfigInvalid(message, file=self.doc.file, line=self.doc.line(full), path=format_path(full))

    def server(self, name: str, written: Mapping[str, Any]) -> None:
        known = _SERVER_SCHEMA["properties"]
        entry = self.renamed(name, written)
        if entry is None:
            return
        for key in entry:
            if key not in known:
                hint = did_you_mean(key, known)
                self.warnings.append(self.error(f"unknown key '{key}' (ignored){hint}", name, key).describe())
        problems = schema_problems(_SERVER_SCHEMA, entry, self.doc, MCPConfigInvalid, ("mcpServers", name))
        if problems:
            self.failed[name] = _as_mcp_error(problems[0])
            return
        if entry.get("disabled", False):
            self.disabled.append(name)
            return
        try:
            self.servers.append(self.spec(name, entry))
        except MCPConfigInvalid as exc:
            self.failed[name] = exc

    def renamed(self, name: str, written: Mapping[str, Any]) -> dict[str, Any] | None:
        """The entry with Ishiki's own keys in their old spelling (``timeoutMs``) renamed, each noted as a
        warning; ``None`` (the server failed) when a key is written in both spellings."""
        found = normalize_keys(_SERVER_SCHEMA, dict(written), self.doc.lines, ("mcpServers", name))
        for rename in found.renames:
            problem = self.error(rename.message, *(str(k) for k in rename.path[1:]))
            if rename.clash:
                self.failed[name] = problem
                return None
            self.warnings.append(problem.describe())
        return dict(found.data) if isinstance(found.data, dict) else dict(written)

    def spec(self, name: str, entry: Mapping[str, Any]) -> ServerSpec:
        transport = self.transport(name, entry)
        expand = self.expander(name)
        common: dict[str, Any] = {
            "trust": entry.get("trust", "trusted"),
            "timeout_ms": entry.get("timeout_ms", DEFAULT_TIMEOUT_MS),
            "startup_timeout_ms": entry.get("startup_timeout_ms", DEFAULT_STARTUP_TIMEOUT_MS),
        }
        if transport == "stdio":
            cwd = expand(entry["cwd"], "cwd") if "cwd" in entry else None
            return ServerSpec(
                name,
                "stdio",
                self.doc.file,
                command=expand(entry["command"], "command"),
                args=tuple(expand(arg, "args", i) for i, arg in enumerate(entry.get("args", []))),
                env={k: expand(v, "env", k) for k, v in entry.get("env", {}).items()},
                cwd=self.base / cwd if cwd else None,
                **common,
            )
        headers = {k: expand(v, "headers", k) for k, v in entry.get("headers", {}).items()}
        return ServerSpec(name, transport, self.doc.file, url=expand(entry["url"], "url"), headers=headers, **common)

    def transport(self, name: str, entry: Mapping[str, Any]) -> Transport:
        declared = entry.get("type")
        transport = _TYPES[declared] if declared else ("stdio" if "command" in entry else "http")
        if "command" not in entry and "url" not in entry:
            raise self.error("a server needs 'command' (stdio) or 'url' (HTTP)", name)
        if transport == "stdio":
            wrong = [key for key in _HTTP_ONLY if key in entry]
            needed = "command"
        else:
            wrong = [key for key in _STDIO_ONLY if key in entry]
            needed = "url"
        if needed not in entry:
            raise self.error(f"a {transport} server needs '{needed}'", name)
        if wrong:
            raise self.error(f"'{wrong[0]}' does not apply to a {transport} server", name, wrong[0])
        return transport

    def expander(self, name: str) -> Any:
        def expand(value: str, *path: str | int) -> str:
            text, problems = expand_vars(value, self.environ)
            if problems:
                raise self.error(problems[0], name, *path)
            return text

        return expand
