"""Loading ``ishiki.yaml``, the host settings of a config directory.

The file is optional: without it every default applies. String values get ``${VAR}`` expansion (tokens live
in the environment). Channel accounts are checked against the channel's own schema when it is installed.

An account with an error (a ``${VAR}`` that is not set, a value its schema refuses) is kept in ``channels``, so
the index of every account (and with it its state directory) stays what the file says, and listed in
``invalid_accounts`` with its errors: such an account is never started, and the profiles claiming its
platform wait for it (``ishiki_host.plugins.activation``).

Host plugins (``plugins``) are checked against their own schema too; a plugin that is not installed (or did
not load), or whose block its schema refuses, is an error and is left out of ``plugins``: it does not run.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ishiki_host.config.keys import normalize_document
from ishiki_host.config.schemas import load_schema
from ishiki_host.config.services import CHANNEL_GROUP, HOST_GROUP, ServiceCatalog, service_name
from ishiki_host.config.validation import compiled, did_you_mean, schema_errors, with_defaults
from ishiki_host.config.yamlio import YamlDocument, format_path, load_yaml
from ishiki_host.errors import ConfigError, HostConfigInvalid
from ishiki_host.eventloop import EventLoop, uvloop_installed

__all__ = [
    "HOST_FILE",
    "MAX_WORKERS",
    "AttachmentSettings",
    "FleetSettings",
    "HeartbeatSettings",
    "HostConfig",
    "HttpSettings",
    "SchedulerSettings",
    "WorkerSlots",
    "host_from_document",
    "load_host_config",
    "resolved_workers",
    "worker_count_problem",
]

HOST_FILE = "ishiki.yaml"
MAX_WORKERS = 64
FsyncPolicy = Literal["always", "turn", "never"]
LogFormat = Literal["text", "json"]
WorkerSlots = Literal["lease", "split"]


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """The model call scheduler: background calls wait ``interactive_grace_seconds`` after interactive ones;
    ``across_workers`` is how the workers of ``ishiki run --workers N`` share ``max_concurrency``."""

    interactive_grace_seconds: float = 2.0
    across_workers: WorkerSlots = "lease"


@dataclass(frozen=True, slots=True)
class FleetSettings:
    """This host's part in a fleet on one PostgreSQL ``store``: its ``name`` (``None``: the machine's host name),
    how long a runtime's lease lasts without renewal, and how often the inbox is polled besides NOTIFY."""

    name: str | None = None
    lease_seconds: float = 15.0
    poll_seconds: float = 5.0


@dataclass(frozen=True, slots=True)
class HeartbeatSettings:
    """Beats missed while the host was down run at start when at most ``catch_up_seconds`` late; beats without
    a target and without an active maker run on ``model``."""

    catch_up_seconds: float = 300.0
    model: str | None = None


@dataclass(frozen=True, slots=True)
class AttachmentSettings:
    """Captured attachments are deleted ``retention`` after their capture (the text of the clean-up beat, e.g.
    ``30d``); ``None`` keeps them forever (``retention: off``)."""

    retention: str | None = "30d"


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """The host's HTTP ingress (``http:`` of ``ishiki.yaml``): off while ``listen`` is ``None``.

    ``listen`` is ``(address, port)`` (port 0: any free port, for tests); ``public_url`` is where platforms
    reach the server from outside (behind a reverse proxy: its URL, path prefix included), without a trailing
    slash. ``max_body_bytes`` and ``deadline_seconds`` are the defaults of every route; ``max_connections``
    caps the connections served at once (more get 503). ``metrics``: the host serves ``/metrics`` (and counts what
    it shows); ``/readyz`` is served either way.
    """

    listen: tuple[str, int] | None = None
    public_url: str | None = None
    max_body_bytes: int = 1_048_576
    deadline_seconds: float = 30.0
    max_connections: int = 100
    metrics: bool = True

    @property
    def listen_text(self) -> str | None:
        """``listen`` as written: ``127.0.0.1:8080``, ``[::1]:8080``."""
        if self.listen is None:
            return None
        address, port = self.listen
        return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


@dataclass(frozen=True, slots=True)
class HostConfig:
    """All of ``ishiki.yaml`` with defaults applied. ``data_dir`` is resolved against the config directory.

    ``channels`` maps a platform to its account entries (each validated by the channel's schema, with its
    defaults, when the channel is installed); ``invalid_accounts`` holds the errors of each account that has
    some, by ``(platform, index)``. ``memory`` is the memory extension's open settings block. ``plugins`` maps
    each host plugin to run to its validated block, with its defaults (those with an error are left out).
    ``warnings`` are what works but should be written otherwise (keys in their old camelCase spelling).
    """

    data_dir: Path
    log_level: str = "info"
    log_format: LogFormat = "text"
    timezone: str = "UTC"
    runtime_idle_seconds: float = 900.0
    reload_interval_seconds: float = 2.0
    shutdown_grace_seconds: float = 10.0
    fsync: FsyncPolicy = "turn"
    store: str = "file"
    fleet: FleetSettings = field(default_factory=FleetSettings)
    event_loop: EventLoop = "auto"
    workers: int | Literal["auto"] = 1
    channels: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    plugins: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    memory: Mapping[str, Any] = field(default_factory=lambda: {"limit": 20, "scope": "sender"})
    heartbeat: HeartbeatSettings = field(default_factory=HeartbeatSettings)
    attachments: AttachmentSettings = field(default_factory=AttachmentSettings)
    http: HttpSettings = field(default_factory=HttpSettings)
    file: str | None = None
    invalid_accounts: Mapping[tuple[str, int], tuple[ConfigError, ...]] = field(default_factory=dict, compare=False)
    warnings: tuple[ConfigError, ...] = field(default=(), compare=False)


def load_host_config(
    config_dir: Path,
    env: Mapping[str, str] | None = None,
    *,
    catalog: ServiceCatalog | None = None,
) -> tuple[HostConfig, list[ConfigError]]:
    """Load ``config_dir/ishiki.yaml`` (defaults when absent); ``env`` defaults to ``os.environ``."""
    path = config_dir / HOST_FILE
    display = str(path)
    if not path.exists():
        return _build(config_dir, with_defaults(load_schema("host"), {}), None), []
    try:
        doc = load_yaml(path, display, HostConfigInvalid, os.environ if env is None else env)
    except HostConfigInvalid as exc:
        return _build(config_dir, with_defaults(load_schema("host"), {}), display), [exc]
    return host_from_document(config_dir, doc, catalog)


def host_from_document(
    config_dir: Path, doc: YamlDocument, catalog: ServiceCatalog | None = None
) -> tuple[HostConfig, list[ConfigError]]:
    """Validate a parsed ``ishiki.yaml``; invalid values fall back to their defaults in the result."""
    data = {} if doc.data is None else doc.data
    errors: list[ConfigError] = list(doc.errors)
    if not isinstance(data, dict):
        errors.append(HostConfigInvalid("expected a mapping of settings", file=doc.file, line=doc.line(())))
        data = {}
    data, clashes = normalize_document(doc, load_schema("host"), HostConfigInvalid, _bare_off(data))
    assert isinstance(data, dict)  # normalizing keeps a mapping a mapping
    errors.extend(clashes)
    found = schema_errors(compiled(load_schema("host")), data, doc, HostConfigInvalid)
    errors.extend(found)
    bad_top = {e.path.split(".", 1)[0].split("[", 1)[0] for e in found}
    data = with_defaults(load_schema("host"), {k: v for k, v in data.items() if k not in bad_top})
    errors.extend(_timezone_problems(doc, data))
    errors.extend(_event_loop_problems(doc, data))
    errors.extend(_workers_problems(doc, data))
    errors.extend(_http_problems(doc, data))
    if any(e.path == "timezone" for e in errors):
        data["timezone"] = "UTC"
    channels, problems = _channels(doc, data["channels"], catalog)
    errors.extend(problems)
    plugins, problems = _plugins(doc, data["plugins"], catalog)
    errors.extend(problems)
    errors.sort(key=lambda e: (e.line or 0, e.path))
    built = _build(config_dir, data, doc.file, channels)
    invalid = _invalid_accounts(channels, errors)
    warnings = tuple(sorted(doc.warnings, key=lambda e: (e.line or 0, e.path)))
    return dataclasses.replace(built, plugins=plugins, invalid_accounts=invalid, warnings=warnings), errors


def _invalid_accounts(
    channels: Mapping[str, tuple[Mapping[str, Any], ...]], errors: list[ConfigError]
) -> dict[tuple[str, int], tuple[ConfigError, ...]]:
    """The errors of each channel account that has some, by ``(platform, index)``."""
    invalid: dict[tuple[str, int], tuple[ConfigError, ...]] = {}
    for platform, accounts in channels.items():
        for index in range(len(accounts)):
            where = format_path(("channels", platform, "accounts", index))
            found = tuple(e for e in errors if e.path == where or e.path.startswith((f"{where}.", f"{where}[")))
            if found:
                invalid[(platform, index)] = found
    return invalid


def _bare_off(data: dict[str, Any]) -> dict[str, Any]:
    """``attachments.retention: off`` as written: YAML reads a bare ``off`` as false."""
    block = data.get("attachments")
    if isinstance(block, dict) and block.get("retention") is False:
        return {**data, "attachments": {**block, "retention": "off"}}
    return data


def _workers_problems(doc: YamlDocument, data: dict[str, Any]) -> list[ConfigError]:
    problem = worker_count_problem(data["workers"])
    if problem is None:
        return []
    data["workers"] = 1
    return [HostConfigInvalid(problem, file=doc.file, line=doc.line(("workers",)), path="workers")]


def worker_count_problem(value: object) -> str | None:
    """Why ``value`` is not a worker count (``None`` when it is one: 1 to ``MAX_WORKERS``, or ``auto``)."""
    if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_WORKERS):
        return None
    return f"{value!r} is not a worker count (a number from 1 to {MAX_WORKERS}, or 'auto')"


def resolved_workers(value: int | Literal["auto"]) -> int:
    """A worker count with ``auto`` resolved to the cores this process may run on (at most ``MAX_WORKERS``)."""
    if value != "auto":
        return value
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def _timezone_problems(doc: YamlDocument, data: Mapping[str, Any]) -> list[ConfigError]:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    name = data["timezone"]
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        message = f"unknown time zone '{name}' (an IANA name such as 'Europe/Paris' or 'UTC')"
        return [HostConfigInvalid(message, file=doc.file, line=doc.line(("timezone",)), path="timezone")]
    return []


def _event_loop_problems(doc: YamlDocument, data: dict[str, Any]) -> list[ConfigError]:
    if data["event_loop"] != "uvloop" or uvloop_installed():
        return []
    data["event_loop"] = "auto"
    message = "event_loop 'uvloop': uvloop is not installed (pip install uvloop; or 'auto' takes it when it is)"
    return [HostConfigInvalid(message, file=doc.file, line=doc.line(("event_loop",)), path="event_loop")]


def _http_problems(doc: YamlDocument, data: dict[str, Any]) -> list[ConfigError]:
    """A ``listen`` that is no address:port turns the ingress off (and says why); so does a ``public_url``
    without ``listen``, which could only mislead (nothing would answer there)."""
    block = data["http"]
    listen = block.get("listen")
    problems: list[ConfigError] = []
    if isinstance(listen, str):
        try:
            parse_listen(listen)
        except ValueError as exc:
            path = ("http", "listen")
            problems.append(
                HostConfigInvalid(f"http.listen {exc}", file=doc.file, line=doc.line(path), path="http.listen")
            )
            block.pop("listen")
    if "public_url" in block and "listen" not in block and not problems:
        path = ("http", "public_url")
        message = "http.public_url is set but http.listen is not: the host serves no HTTP without listen"
        problems.append(HostConfigInvalid(message, file=doc.file, line=doc.line(path), path="http.public_url"))
    return problems


def _channels(
    doc: YamlDocument, raw: Mapping[str, Any], catalog: ServiceCatalog | None
) -> tuple[dict[str, tuple[Mapping[str, Any], ...]], list[ConfigError]]:
    channels: dict[str, tuple[Mapping[str, Any], ...]] = {}
    problems: list[ConfigError] = []
    for platform, block in raw.items():
        accounts = list(block.get("accounts", []))
        spec = catalog.spec(service_name(CHANNEL_GROUP, platform)) if catalog else None
        if spec is None:
            hint = did_you_mean(platform, catalog.names(CHANNEL_GROUP)) if catalog else ""
            if hint:  # most likely a typo of an installed channel, not a channel still to be installed
                path = ("channels", platform)
                message = f"no channel '{platform}' is installed{hint}"
                problems.append(HostConfigInvalid(message, file=doc.file, line=doc.line(path), path=format_path(path)))
            channels[platform] = tuple(accounts)
            continue
        validator = compiled(spec.config_schema)
        for index, written in enumerate(accounts):
            where = ("channels", platform, "accounts", index)
            account, clashes = normalize_document(doc, spec.config_schema, HostConfigInvalid, written, where)
            problems.extend([*clashes, *schema_errors(validator, account, doc, HostConfigInvalid, where)])
            accounts[index] = account
        channels[platform] = tuple(with_defaults(spec.config_schema, a) for a in accounts)
    return channels, problems


def _plugins(
    doc: YamlDocument, raw: Mapping[str, Any], catalog: ServiceCatalog | None
) -> tuple[dict[str, Mapping[str, Any]], list[ConfigError]]:
    """The host plugins to run, each block validated by its plugin's schema (without a catalog: as written)."""
    plugins: dict[str, Mapping[str, Any]] = {}
    problems: list[ConfigError] = []
    for name, written in raw.items():
        block = {} if written is None else written  # `dash:` with nothing after it: the plugin's defaults
        path = ("plugins", name)
        spec = catalog.spec(service_name(HOST_GROUP, name)) if catalog else None
        if catalog is not None and spec is None:
            hint = did_you_mean(name, catalog.names(HOST_GROUP))
            message = f"no host plugin '{name}' is installed or it failed to load{hint} (see ishiki plugins)"
            problems.append(HostConfigInvalid(message, file=doc.file, line=doc.line(path), path=format_path(path)))
            continue
        found: list[ConfigError] = []
        if spec is not None:
            block, found = normalize_document(doc, spec.config_schema, HostConfigInvalid, block, path)
            found.extend(schema_errors(compiled(spec.config_schema), block, doc, HostConfigInvalid, path))
        problems.extend(found)
        if not found:
            plugins[name] = with_defaults(spec.config_schema, block) if spec else block
    return plugins, problems


def _build(
    config_dir: Path,
    data: Mapping[str, Any],
    file: str | None,
    channels: Mapping[str, tuple[Mapping[str, Any], ...]] | None = None,
) -> HostConfig:
    return HostConfig(
        data_dir=config_dir / data["data_dir"],
        log_level=data["log_level"],
        log_format=data["log_format"],
        timezone=data["timezone"],
        runtime_idle_seconds=float(data["runtime_idle_seconds"]),
        reload_interval_seconds=float(data["reload_interval_seconds"]),
        shutdown_grace_seconds=float(data["shutdown_grace_seconds"]),
        fsync=data["fsync"],
        store=data["store"],
        fleet=FleetSettings(
            data["fleet"].get("name"), float(data["fleet"]["lease_seconds"]), float(data["fleet"]["poll_seconds"])
        ),
        event_loop=data["event_loop"],
        workers=data["workers"],
        channels=dict(channels or {}),
        scheduler=SchedulerSettings(
            float(data["scheduler"]["interactive_grace_seconds"]), data["scheduler"]["across_workers"]
        ),
        memory=dict(data["memory"]),
        heartbeat=HeartbeatSettings(float(data["heartbeat"]["catch_up_seconds"]), data["heartbeat"].get("model")),
        attachments=_attachments(data["attachments"]),
        http=_http(data["http"]),
        file=file,
    )


def _http(block: Mapping[str, Any]) -> HttpSettings:
    listen = block.get("listen")
    public = block.get("public_url")
    return HttpSettings(
        listen=parse_listen(listen) if isinstance(listen, str) else None,
        public_url=public.rstrip("/") if isinstance(public, str) else None,
        max_body_bytes=int(block["max_body_bytes"]),
        deadline_seconds=float(block["deadline_seconds"]),
        max_connections=int(block["max_connections"]),
        metrics=bool(block["metrics"]),
    )


def parse_listen(text: str) -> tuple[str, int]:
    """``address:port`` (``[v6]:port`` for IPv6) as ``(address, port)``; ``ValueError`` saying what is wrong."""
    head, sep, port = text.strip().rpartition(":")
    if not sep or not head:
        raise ValueError(f"{text!r} is not address:port (e.g. 127.0.0.1:8080)")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: the port must be a number from 0 to 65535")
    address = head[1:-1] if head.startswith("[") and head.endswith("]") else head
    try:
        ipaddress.ip_address(address)
    except ValueError:
        if address != "localhost":
            raise ValueError(f"{text!r}: {address!r} is not an IP address (or localhost)") from None
    return address, int(port)


def _attachments(block: Mapping[str, Any]) -> AttachmentSettings:
    retention = str(block["retention"]).strip()
    return AttachmentSettings(None if retention == "off" else retention)
