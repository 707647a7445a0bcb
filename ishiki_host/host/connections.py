"""The host's side of channels: live connections, echo dropping, and supervision with back-off.

``ChannelDirectory`` is the runtimes' ``Outlets``: the running connection of each ``platform:selfId``, and the
ids the host sent (kept per channel, bounded), so a platform reporting the bot's own message back is dropped
by message id, never by user id.

``ChannelSupervisor`` runs one account's connection: ``create`` it, ``tg.start`` its ``run`` (readiness),
register it, and when it crashes, restart it after a back-off (doubling from 1 s to 60 s, jittered by the
host's seeded random source) while every other channel keeps running. A ``ChannelError`` whose ``fatal`` is
true (a refused token), or a ``ConfigError`` (the plugin refused its account entry), is reported once, without
a traceback, and the channel stays stopped; one whose ``fatal`` is false (the platform cannot be reached) is
logged in one line and restarted like a crash. A ``run`` that returns has finished (the console at the end of
its input), and one not ready within ``start_timeout`` (60 s, real time) is restarted like a passing trouble
(``ChannelNotReady``).

In a fleet (``store: postgresql://...``) an account whose channel says it is ``exclusive`` (one connection at a
time: long polling, a linked device) runs only while this host holds the account's lease (``AccountLeases``):
until then its supervisor is on ``standby``, and a lease lost while it runs stops the connection at once and
waits for the lease again, so two hosts never poll one account.

``ChannelContext`` is the ``ChannelHost`` each connection gets; its ``rng`` is seeded from the host's seed
and the account (``platform#index``), so a seeded host replays every channel's jitter whatever order they
start in. Its ``command_names(channel_id)`` are those of the live runtime answering that channel
(``runtime_command_names``), else the host's own.
"""

from __future__ import annotations

import logging
import random
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ishiki_host.addresses.keys import escape_segment
from ishiki_host.core.backoff import jittered_delay
from ishiki_host.errors import ChannelError, ChannelNotReady, ConfigError

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from ishiki_host.channels.base import ChannelConnection, ChannelHost, Delivery, InboundAttachment
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.shared import SharedObjects
    from ishiki_host.host.routes import RouteTable
    from ishiki_host.ingress.types import HttpMount
    from ishiki_host.plugins.commands import Command
    from ishiki_host.resources import AssetFetchers

DispatchFn = Callable[["IshikiEvent", Sequence["InboundAttachment"]], Awaitable["Delivery"]]

__all__ = [
    "BACKOFF_CAP",
    "ChannelContext",
    "ChannelDirectory",
    "ChannelSpec",
    "ChannelSupervisor",
    "backoff_delay",
    "channel_rng",
    "hook_prefix",
    "runtime_command_names",
    "single_error",
    "state_dir",
]

logger = logging.getLogger("ishiki_host.channels")

BACKOFF_BASE = 1.0
BACKOFF_CAP = 60.0
STABLE_SECONDS = 60.0  # a connection that ran this long before crashing restarts from the shortest back-off
START_TIMEOUT = 60.0
_ECHO_LIMIT = 50_000
_URL_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")


def backoff_delay(attempt: int, rng: random.Random) -> float:
    """The wait before restart ``attempt`` (0 = the first): doubling from 1 s, capped at 60 s, 50-100 % jitter."""
    return jittered_delay(attempt, rng, initial=BACKOFF_BASE, maximum=BACKOFF_CAP)


class ChannelDirectory:
    """Live connections by sid, and the ids the host sent (see the module docstring)."""

    def __init__(self) -> None:
        self._connections: dict[str, ChannelConnection] = {}
        self._sent: OrderedDict[tuple[str, str, str], None] = OrderedDict()
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after every change of the live connections (a supervisor tells its workers);
        returns the function that removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    def connection(self, sid: str) -> ChannelConnection | None:
        """The running connection of ``sid``."""
        return self._connections.get(sid)

    def sids(self) -> tuple[str, ...]:
        """The sids with a running connection."""
        return tuple(sorted(self._connections))

    def register(self, sid: str, connection: ChannelConnection) -> None:
        """A connection reported ready."""
        if sid in self._connections and self._connections[sid] is not connection:
            logger.warning("two connections claim %s; the newer one sends from now on", sid)
        self._connections[sid] = connection
        self._changed()

    def unregister(self, sid: str, connection: ChannelConnection) -> None:
        """A connection ended."""
        if self._connections.get(sid) is connection:
            del self._connections[sid]
            self._changed()

    def note_sent(self, sid: str, channel_id: str, ids: Sequence[str]) -> None:
        """Remember ids the host sent (the oldest are forgotten beyond a bound)."""
        for message_id in ids:
            self._sent[(sid, channel_id, message_id)] = None
        while len(self._sent) > _ECHO_LIMIT:
            self._sent.popitem(last=False)

    def is_echo(self, event: IshikiEvent) -> bool:
        """Whether ``event`` reports a message the host itself sent."""
        return (event.sid, event.channel_id, event.message_id) in self._sent


@dataclass(frozen=True, slots=True)
class ChannelSpec:
    """One account of one platform: the plugin's provider object and the validated account entry."""

    platform: str
    index: int
    account: Mapping[str, Any]
    provider: Any

    @property
    def label(self) -> str:
        """``platform#index`` (or ``platform`` for the console), for logs."""
        return self.platform if self.platform == "console" else f"{self.platform}#{self.index}"


class AccountLeases(Protocol):
    """Which host of a fleet runs an exclusive account (``ishiki_host.host.fleet``; see the module docstring)."""

    async def hold_account(self, label: str, lost: Callable[[], None]) -> None:
        """Return once this host holds the lease of account ``label``; ``lost()`` is called if it loses it."""
        ...

    async def release_account(self, label: str) -> None:
        """Give the account's lease up (its connection stopped here)."""
        ...


class ChannelSupervisor:
    """Runs and restarts one account's connection (see the module docstring)."""

    def __init__(
        self,
        spec: ChannelSpec,
        context: Any,
        directory: ChannelDirectory,
        clock: Clock,
        rng: random.Random,
        *,
        on_finished: Callable[[ChannelSupervisor], None] = lambda s: None,
        start_timeout: float = START_TIMEOUT,
        leases: AccountLeases | None = None,
    ):
        self.spec = spec
        exclusive = getattr(spec.provider, "exclusive", None)
        # Only an exclusive account waits for its lease; without ``exclusive`` (not a ``Channel``): the safe side.
        self.leases = leases if leases is not None and (exclusive is None or exclusive(spec.account)) else None
        self.start_timeout = start_timeout
        self.context = context
        self.directory = directory
        self.clock = clock
        self.rng = rng
        self.on_finished = on_finished
        self.scope = anyio.CancelScope()
        self.connection: ChannelConnection | None = None
        self.state = "new"
        self.restarts = 0
        self.errors = 0  # lives of the connection that ended in an exception (``/metrics``)
        self.last_error: str | None = None

    @property
    def sid(self) -> str | None:
        """The connection's sid once it is ready."""
        conn = self.connection
        return f"{conn.platform}:{conn.self_id}" if conn is not None and self.state == "running" else None

    def stop(self) -> None:
        """Stop the connection (and any restart)."""
        self.scope.cancel()

    def connection_status(self) -> dict[str, Any] | None:
        """What the connection reports of itself through its optional ``status()`` (``None`` without one)."""
        report = getattr(self.connection, "status", None)
        if not callable(report):
            return None
        try:
            return dict(report())
        except Exception:  # a status that fails must not take the host's status down with it
            logger.exception("channel %s: its status() failed", self.spec.label)
            return None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until stopped, the connection finishes or fails fatally; ready once the first attempt is up
        (or has failed)."""
        reported = False

        def report() -> None:
            nonlocal reported
            if not reported:
                reported = True
                task_status.started()

        attempt = 0
        with self.scope:
            try:
                while True:
                    started = await self._leased_attempt(report)
                    report()
                    if self.state in ("finished", "failed"):
                        break
                    if started is not None and self.clock.monotonic() - started >= STABLE_SECONDS:
                        attempt = 0
                    delay = backoff_delay(attempt, self.rng)
                    attempt += 1
                    self.restarts += 1
                    logger.warning(
                        "channel %s is down (%s); restarting in %.1f s", self.spec.label, self.last_error, delay
                    )
                    self.state = "waiting"
                    await self.clock.sleep(delay)
            finally:
                if self.leases is not None:
                    with anyio.CancelScope(shield=True):
                        await self.leases.release_account(self.spec.label)
        report()
        self.on_finished(self)

    async def _leased_attempt(self, report: Callable[[], None]) -> float | None:
        """One life of the connection, run while this host holds the account's lease when it needs one."""
        if self.leases is None:
            return await self._attempt(report)
        self.state = "standby"
        report()  # standing by is started: the host does not wait for another host to let the account go
        with anyio.CancelScope() as life:
            await self.leases.hold_account(self.spec.label, life.cancel)
            started = await self._attempt(report)
        if life.cancelled_caught:
            self.state = "crashed"
            self.last_error = "the account's lease went to another host of the fleet"
        return started

    async def _attempt(self, report: Callable[[], None]) -> float | None:
        """One life of the connection; returns when it started (``None`` if it never did)."""
        started: float | None = None
        connection: ChannelConnection | None = None
        try:
            connection = self.connection = self.spec.provider.create(self.context, self.spec.account)
            async with anyio.create_task_group() as tg:
                with anyio.move_on_after(self.start_timeout) as starting:
                    await tg.start(connection.run)
                if starting.cancelled_caught:
                    raise ChannelNotReady(f"{connection.platform} was not ready within {self.start_timeout:g} s")
                started = self.clock.monotonic()
                self.state = "running"
                self.directory.register(f"{connection.platform}:{connection.self_id}", connection)
                logger.info("channel %s is up as %s:%s", self.spec.label, connection.platform, connection.self_id)
                report()
        except Exception as exc:
            error = single_error(exc)
            self.errors += 1
            self.last_error = f"{type(error).__name__}: {error}"
            if isinstance(error, ConfigError) or (isinstance(error, ChannelError) and error.fatal):
                self.state = "failed"  # a config mistake (its account) is the operator's to fix: no restart loop
                logger.error("channel %s failed: %s (not restarted)", self.spec.label, error)
            elif isinstance(error, ChannelError):
                self.state = "crashed"  # a passing trouble the connection explained: one line, no traceback
            else:
                self.state = "crashed"
                logger.error("channel %s crashed", self.spec.label, exc_info=error)
        else:
            self.state = "finished"
            logger.info("channel %s finished", self.spec.label)
        finally:
            if connection is not None and started is not None:
                self.directory.unregister(f"{connection.platform}:{connection.self_id}", connection)
        return started


def single_error(exc: BaseException) -> BaseException:
    """The one exception inside (nested) exception groups, or ``exc`` itself."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def channel_rng(seed: int | None, spec: ChannelSpec) -> random.Random:
    """The random source of one account's connection: seeded from ``seed`` and the account when ``seed`` is set."""
    return random.Random(None if seed is None else f"{seed}/{spec.label}")


def state_dir(data_dir: Path, spec: ChannelSpec) -> Path:
    """Where one account's connection keeps its state: ``<data>/channels/<platform>/<account id or index>``."""
    name = str(spec.account.get("id") or spec.index)
    return Path(data_dir, "channels", escape_segment(spec.platform), escape_segment(name))


def hook_prefix(spec: ChannelSpec) -> str:
    """Where one account's webhooks are served: ``/hooks/<platform>/<account id>``, or the account's index
    when it has no id or one that is not a plain URL segment (letters, digits, ``-``, ``_``, ``.``, ``~``)."""
    name = str(spec.account.get("id") or "")
    segment = name if _URL_SEGMENT.fullmatch(name) and name not in (".", "..") else str(spec.index)
    return f"/hooks/{spec.platform}/{segment}"  # a platform is an entry-point name: a plain segment already


def runtime_command_names(
    routes: RouteTable, sid: str | None, channel_id: str, host_commands: Sequence[Command]
) -> list[str]:
    """The commands of the live runtime answering ``channel_id`` of ``sid`` (names and aliases, sorted); the
    host's own ``host_commands`` when none runs there yet (or its table is not built), or ``sid`` is unknown."""
    route = routes.lookup(sid, channel_id) if sid is not None else None
    runtime = route.runtimes.get(route.key_for(sid, channel_id)) if route is not None and sid is not None else None
    names = runtime.command_names() if runtime is not None else []
    return names or sorted(name for command in host_commands for name in command.names)


class ChannelContext:
    """The ``ChannelHost`` a connection is created with: clock, random source, its state directory, the shared
    asset fetchers, its logger, its HTTP mount, ``dispatch`` into the host, ``request_stop`` (the console
    asks the host to exit at the end of its input; the host stops only when no other channel runs), and the
    host's shared objects (``shared``: its ``HostServices``)."""

    def __init__(
        self,
        *,
        clock: Clock,
        rng: random.Random,
        state_dir: Path,
        fetchers: AssetFetchers,
        logger: logging.Logger,
        dispatch: DispatchFn,
        request_stop: Callable[[str, bool], bool],
        http_mount: Callable[[], HttpMount],
        shared: SharedObjects,
        command_names: Callable[[str], Sequence[str]] = lambda channel_id: (),
    ):
        self._command_names = command_names
        self._http_mount = http_mount
        self._shared = shared
        self._clock = clock
        self._rng = rng
        self._state_dir = state_dir
        self._fetchers = fetchers
        self._logger = logger
        self._dispatch = dispatch
        self._request_stop = request_stop

    @property
    def clock(self) -> Clock:
        """The host's clock."""
        return self._clock

    @property
    def rng(self) -> random.Random:
        """The connection's random source (seeded from the host's seed and the account when it has one)."""
        return self._rng

    @property
    def state_dir(self) -> Path:
        """The connection's own state directory (created on first access)."""
        self._state_dir.mkdir(parents=True, exist_ok=True)
        return self._state_dir

    @property
    def fetchers(self) -> AssetFetchers:
        """The host's lazy-asset fetchers."""
        return self._fetchers

    @property
    def logger(self) -> logging.Logger:
        """The connection's logger."""
        return self._logger

    @property
    def shared(self) -> SharedObjects:
        """The host's shared objects (its ``HostServices``)."""
        return self._shared

    def command_names(self, channel_id: str) -> Sequence[str]:
        """The slash commands of the runtime answering ``channel_id`` of this account, sorted (the host's own
        when none runs there yet)."""
        return self._command_names(channel_id)

    def http_mount(self) -> HttpMount:
        """The account's mount on the host's HTTP server (``hook_prefix``)."""
        return self._http_mount()

    async def dispatch(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> Delivery:
        """Route ``event`` to its runtime; returns once it is durable there (or known to have no owner)."""
        return await self._dispatch(event, attachments)

    def request_stop(self, reason: str, *, force: bool = False) -> bool:
        """Ask the host to stop (turns finish within the grace, then everything closes); ``False`` when other
        channels run, so the host runs on and only the asking connection should finish. ``force``: stop
        whatever else runs (the operator left: Ctrl-D on the console's terminal)."""
        return self._request_stop(reason, force)


if TYPE_CHECKING:
    _CONTRACT: type[ChannelHost] = ChannelContext  # mypy holds the context to the channel contract
