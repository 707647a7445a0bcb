"""The contract of host plugins (entry-point group ``ishiki.host``): whole-host services such as a dashboard or an
API of one's own, beside the profiles rather than inside a runtime.

A host plugin is a ``HostPlugin`` subclass named by an entry point of ``ishiki.host``; it runs only when
``ishiki.yaml`` configures it (``plugins: {<name>: {...}}``, the block checked against its ``config_schema``).
The host calls ``create(ctx, config)`` once per start of the plugin and runs the instance's
``run(task_status=...)`` in its own task group, under a supervisor as a channel's connection is: ready once
``task_status.started()`` is called (within 60 s), restarted with back-off when it raises, reported once and
left stopped when it raises a fatal error (``HostPluginError`` whose ``fatal`` is true, ``IngressError``, a
``ConfigError``), finished when ``run`` returns. It starts after the host's HTTP server and before the channels,
and stops after the channels, before the HTTP server. A reload that changes its block restarts it; one that
removes the block stops it.

Everything the plugin sees of the host is its ``HostPluginContext``: the clock, a logger, a state directory,
an HTTP mount at ``/<name>``, the host's shared services, a read-only view of the host, the admins of its
heartbeats and DM pairing, and a way to ask for a reload. It never holds the ``Host`` itself.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ishiki_host.config.services import Plugin, PluginConfig
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    import logging
    from pathlib import Path

    from anyio.abc import TaskStatus

    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.config.models import ModelsConfig
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.errors import ConfigError
    from ishiki_host.ingress.types import HttpMount
    from ishiki_host.plugins.runtime_api import RuntimeContext
    from ishiki_host.plugins.services import HostServices
    from ishiki_host.store.repos.beat_types import Beat, BeatRun, BeatSpec
    from ishiki_host.store.repos.pairing import PairedSender, PairingRequest

__all__ = [
    "RESERVED_PREFIXES",
    "HeartbeatAdmin",
    "HostPlugin",
    "HostPluginContext",
    "HostPluginInstance",
    "InstalledPlugin",
    "LogLine",
    "LogTail",
    "PairingAdmin",
    "ProfileStatus",
    "RuntimeLogView",
]

RESERVED_PREFIXES = frozenset({"/hooks", "/healthz", "/readyz", "/metrics"})
"""Paths of the host's own (channels' webhooks, health, readiness, metrics) that no host plugin may mount: a
plugin is served at ``/<name>``, so these names are refused (by the host, its test context and the scaffold)."""


@dataclass(frozen=True, slots=True)
class ProfileStatus:
    """One profile directory as the host sees it now (``HostPluginContext.profiles``).

    ``state`` is ``ready`` (active), ``waiting`` (``missing`` lists the services it needs), ``invalid``
    (``errors`` say why, each with its file and line), ``skipped`` or ``disabled``; ``runtimes`` are the keys
    of its runtimes alive (empty unless it is active).
    """

    id: str
    state: str
    missing: tuple[str, ...] = ()
    errors: tuple[ConfigError, ...] = ()
    runtimes: tuple[RuntimeKey, ...] = ()
    profile: Profile | None = None
    """The loaded profile (its persona, channels, ``extends``), ``None`` when it did not load (``invalid``)."""


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of the host's log as ``HostPluginContext.logs`` keeps it: ``seq`` counts from 1 over the host's
    life, ``ts`` is wall-clock seconds, ``level`` the level's name (``INFO``), ``message`` the formatted
    message (with the traceback's last line when there was one)."""

    seq: int
    ts: float
    level: str
    logger: str
    message: str


class LogTail(Protocol):
    """The host's most recent log lines (a bounded ring: the last 2,000), for a plugin to show."""

    def recent(self, limit: int = 200, *, min_level: str = "DEBUG", after: int = 0) -> tuple[LogLine, ...]:
        """The last ``limit`` lines at ``min_level`` (a level name) or above whose ``seq`` is above ``after``,
        oldest first; ``ValueError`` for an unknown level name."""
        ...

    @property
    def last_seq(self) -> int:
        """The ``seq`` of the newest line (0 before the first)."""
        ...

    async def wait_after(self, seq: int) -> None:
        """Return once a line newer than ``seq`` exists (at once when one does)."""
        ...


class RuntimeLogView(Protocol):
    """A live runtime's fact log, read-only (``HostPluginContext.runtime_log``): the same whether the runtime
    runs in this process or in a worker of ``ishiki run --workers N``, where the worker that owns the key
    answers each read and wait over its link.

    A view follows one life of the runtime: once that runtime stops, ``closed`` is true, waits return at once
    and reads raise ``FactLogError``; ask ``runtime_log`` again for the runtime that took its place. Entries
    come oldest first, and a window costs what it holds, not the log's history.
    """

    @property
    def key(self) -> RuntimeKey:
        """The runtime's address."""
        ...

    @property
    def closed(self) -> bool:
        """Whether the runtime this view reads has stopped (known at the latest when a wait returns)."""
        ...

    async def window(self, *, before: int | None = None, limit: int) -> list[Entry]:
        """The newest ``limit`` entries whose id is below ``before`` (of the whole log when ``None``), oldest
        first."""
        ...

    async def since(self, after: int, *, limit: int) -> list[Entry]:
        """The entries newer than ``after``, oldest first: the newest ``limit`` of them when there are more
        (compare the first id with ``after + 1`` to tell what was skipped)."""
        ...

    async def wait_appended(self, after: int) -> None:
        """Return once the log holds an entry newer than ``after`` (at once when it does), or once the runtime
        has stopped."""
        ...


@dataclass(frozen=True, slots=True)
class InstalledPlugin:
    """One entry point of the host's plugin groups (``ishiki plugins`` lists them): ``group`` such as
    ``ishiki.channel``, ``name``, ``target`` (``module:Class``), the distribution and version that ship it,
    and ``error`` when it did not load (or speaks another plugin API)."""

    group: str
    name: str
    target: str
    distribution: str | None = None
    version: str | None = None
    error: str | None = None


class HeartbeatAdmin(Protocol):
    """The host's heartbeats, as an operator's tool manages them (``HostPluginContext.heartbeats``).

    Beats made here are user beats (``managed`` false) and run on the host's scheduler from the next tick;
    managed beats (from ``heartbeats.json``, or the host's own) are read-only: ``source`` names where they
    come from. A bad field raises ``BeatInvalid`` whose ``field`` names it (``cron``, ``timezone``, ``target``,
    ``text``, ``id``, ``type``); a managed beat or an unknown id raises ``BeatRefused``.
    """

    async def beats(self) -> list[Beat]:
        """Every beat, managed and not, oldest first."""
        ...

    async def get(self, beat_id: str) -> Beat | None:
        """One beat, or ``None``."""
        ...

    async def runs(self, beat_id: str, *, limit: int = 20) -> list[BeatRun]:
        """The beat's last runs, newest first."""
        ...

    def source(self, beat: Beat) -> str | None:
        """Where a managed beat comes from (``heartbeats.json`` in the config directory, or ``ishiki.yaml``
        for the host's own), ``None`` for a user beat."""
        ...

    def paused(self, beat: Beat) -> bool:
        """Whether the beat is paused (it keeps its definition and does not run until resumed)."""
        ...

    async def create(self, spec: BeatSpec, *, created_by: str) -> Beat:
        """Store and schedule a user beat; ``BeatInvalid`` for a bad field or an id in use."""
        ...

    async def update(self, spec: BeatSpec) -> Beat:
        """Replace a user beat's definition (its next run follows the new schedule)."""
        ...

    async def pause(self, beat_id: str) -> Beat:
        """Stop a user beat from running, keeping it."""
        ...

    async def resume(self, beat_id: str) -> Beat:
        """Schedule a paused user beat again, from now."""
        ...

    async def delete(self, beat_id: str) -> None:
        """Delete a user beat (its past runs stay)."""
        ...


class PairingAdmin(Protocol):
    """DM pairing, as an operator's tool manages it (``HostPluginContext.pairing``): what ``ishiki pairing``
    lists, approves and revokes, on the host's memory database.

    A profile with ``trust.unlisted: pairing`` gives an unlisted sender in a direct chat a code; approving the
    code lists the sender at a level for that profile, and the running host serves them from their next
    message. Revoking the approval refuses them from their next message (a direct one gets a new code).
    """

    async def requests(self) -> list[PairingRequest]:
        """The open requests (not expired), oldest first."""
        ...

    async def approved(self) -> list[PairedSender]:
        """Every approval, by profile then sender."""
        ...

    async def approve(self, code: str, level: TrustLevel) -> PairedSender:
        """Let the sender of ``code`` (typed in any case, with spaces or dashes) in at ``level``.

        ``PairingCodeError`` (``ishiki_host.errors``) when no open request has that code: its ``reason`` is
        ``unknown``, ``approved`` (used before) or ``expired``, and its message says so in words."""
        ...

    async def revoke(self, profile: str, sender: str) -> PairedSender | None:
        """Remove the approval of ``sender`` (``platform:userId``) for ``profile``: the approval removed, or
        ``None`` when there was none."""
        ...


class HostPluginInstance(Protocol):
    """What ``HostPlugin.create`` returns: one life of the plugin, run by the host's supervisor."""

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        """Serve until cancelled: mount routes, start work, then call ``task_status.started()`` once ready.

        Raise ``HostPluginUnavailable`` for a passing trouble (restarted with back-off) and ``HostPluginError``
        (fatal) for what the operator must fix; returning means the plugin finished and is not restarted.
        """
        ...


class HostPluginContext(Protocol):
    """What a host plugin sees of its host (see the module docstring)."""

    @property
    def name(self) -> str:
        """The plugin's entry-point name, as written under ``plugins`` of ``ishiki.yaml``."""
        ...

    @property
    def clock(self) -> Clock:
        """The host's clock (a ``FakeClock`` in tests): use it for every sleep and timestamp."""
        ...

    @property
    def logger(self) -> logging.Logger:
        """The plugin's logger, ``ishiki_host.hostplugin.<name>``."""
        ...

    @property
    def state_dir(self) -> Path:
        """The plugin's own directory, ``<data_dir>/plugins/<name>`` (created on first access); it survives
        restarts and reloads."""
        ...

    @property
    def services(self) -> HostServices:
        """What the host shares with every plugin: the memory database (``services.memory``), the runtimes
        (``services.runtimes.runtime_for``), host-wide work (``services.spawn``) and shared objects by key."""
        ...

    def http_mount(self) -> HttpMount:
        """A mount at ``/<name>`` on the host's HTTP server, held while its ``async with`` runs; entering it
        raises ``IngressError`` (fatal) when the host serves no HTTP or the prefix is taken (``/hooks`` and the
        host's own routes are)."""
        ...

    def status(self) -> Mapping[str, Json]:
        """The host's report as ``ishiki status --json`` prints it: ``host`` (pid, phase, directories, version,
        uptime), ``profiles`` (state, missing services, errors, runtimes alive), ``routes``, ``channels``,
        ``plugins``, ``gateway``, ``http`` and ``ready``. A fresh snapshot on each call."""
        ...

    def profiles(self) -> tuple[ProfileStatus, ...]:
        """Every profile directory with its state and its runtimes alive, sorted by id."""
        ...

    def request_reload(self) -> None:
        """Ask the host to reload its config directory soon (in its own task: a reload may restart this
        plugin, so it never runs in the plugin's task). Returns at once."""
        ...

    def runtime(self, key: RuntimeKey) -> RuntimeContext | None:
        """The runtime ``key`` while it is alive in this process (its fact log, bus, sessions), never spawning
        one; ``None`` when it is not running, and always under ``ishiki run --workers N``, whose runtimes run in
        the workers (``runtime_log`` and ``tools`` reach them). Read it; what it writes is the runtime's own."""
        ...

    async def runtime_log(self, key: RuntimeKey) -> RuntimeLogView | None:
        """The fact log of the live runtime ``key``, read-only, wherever it runs (this process, or the worker
        that owns the key); ``None`` when it is not running. Never spawns one."""
        ...

    async def tools(self, key: RuntimeKey) -> Sequence[Tool] | None:
        """Every tool a turn of the live runtime ``key`` could offer, before switches and trust filter them
        (what ``/tools`` lists); ``None`` when it is not running. For a runtime in a worker, the worker lists
        them: their names, descriptions, parameters, trust and kind are its; calling one raises ``ToolError``
        (a tool runs in its runtime's turns)."""
        ...

    @property
    def heartbeats(self) -> HeartbeatAdmin | None:
        """The host's heartbeats to list and manage; ``None`` when the host runs none (it has no memory database,
        or ``ishiki.ext.heartbeat`` is not installed) and until its heartbeats start, just after the host plugins
        do: read it when it is needed, not in ``create``."""
        ...

    @property
    def pairing(self) -> PairingAdmin | None:
        """DM pairing's requests and approvals to list, approve and revoke; ``None`` when the host has no memory
        database (``services.memory_error`` says why), and then it keeps no codes and refuses unlisted senders."""
        ...

    @property
    def logs(self) -> LogTail:
        """The host's recent log lines."""
        ...

    def installed(self) -> tuple[InstalledPlugin, ...]:
        """Every plugin entry point the host found, with its load error if any, sorted by group and name."""
        ...

    def models(self) -> ModelsConfig:
        """The ``models.yaml`` the host runs now: providers with their models (and ``price``) and groups, every
        credential shown as ``<hidden>``. Read it on each use: a reload may change it."""
        ...


class HostPlugin(Plugin):
    """Base class of host plugins (group ``ishiki.host``; see the module docstring).

    ``config_schema`` is the schema of ``plugins.<name>`` in ``ishiki.yaml`` (an empty block when the name is
    written without one); its defaults are applied before ``create`` sees it.
    """

    @abstractmethod
    def create(self, ctx: HostPluginContext, config: PluginConfig) -> HostPluginInstance:
        """Make one life of the plugin: the host runs its ``run`` and makes a new one for each restart.

        ``ctx`` is the host as the plugin sees it; ``config`` is the validated ``plugins.<name>`` block with
        defaults. Keep it quick and free of I/O: start things in ``run``.
        """
