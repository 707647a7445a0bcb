"""One MCP server, supervised: connect, list, serve calls, refresh on change, restart with back-off.

``ServerRunner.run`` is the supervisor loop (the manager runs it as a service task). Each attempt spawns or
connects (``stdio``/``http`` transports), negotiates with the SDK ``Client`` (``mode="auto"``: the
2026 ``server/discover`` era, or the ``initialize`` handshake with older servers) and lists tools,
resources and templates, all within ``startup_timeout_ms``. Then it serves until the connection is lost,
the server is found hung, or ``stop()``; and it tries again after a back-off (1 s, doubling, at most 60 s;
back to 1 s once a server stayed up for a minute).

States: ``starting`` (first attempt), ``ready``, ``restarting`` (it was ready once; the last listing is
still offered and calls wait for it within their timeout), ``failed`` (never ready; retried with back-off;
tools absent), ``stopped``.

Change notifications (``notifications/tools/list_changed`` and ``resources/list_changed``, which arrive on
the session in the handshake era and on a ``subscriptions/listen`` stream in the 2026 era) mark the
listing dirty; one refresher task re-lists, so a burst of notifications costs one listing.

A call that times out becomes an error result and is cancelled on the server; the server is kept unless a
health check (``tools/list`` within ``min(timeout_ms, 10 s)``) gets no answer either: then it is considered
hung, killed without a grace period and restarted. Back-off and call deadlines run on the host's clock.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import mcp.types as types
from ishiki_host import run_with_deadline
from mcp import Client, MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from ishiki_ext_mcp.errors import CallError, CallTimedOut, ServerUnavailable
from ishiki_ext_mcp.http import HttpTransport
from ishiki_ext_mcp.listing import Listing, list_all
from ishiki_ext_mcp.stdio import StartFailed, StdioTransport

if TYPE_CHECKING:
    from pathlib import Path

    from ishiki_host import Clock

    from ishiki_ext_mcp.config import ServerSpec
    from ishiki_ext_mcp.stdio import ProcessInfo

__all__ = ["Backoff", "ServerRunner", "State"]

State = Literal["starting", "ready", "restarting", "failed", "stopped"]
T = TypeVar("T")

CLIENT_INFO = types.Implementation(name="ishiki-host", version="1")
PROBE_SECONDS = 10.0
STOP_SECONDS = 15.0


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays between attempts: ``base`` doubling up to ``cap``; ``stable`` seconds of uptime reset it."""

    base: float = 1.0
    cap: float = 60.0
    stable: float = 60.0

    def delay(self, failures: int) -> float:
        """The wait before the next attempt after ``failures`` consecutive failures (>= 1)."""
        return float(min(self.cap, self.base * 2 ** max(0, failures - 1)))


class ServerRunner:
    """Supervises one server (see the module docstring).

    Read ``state``, ``error`` (why it is not ready), ``listing``, ``info`` (pid, exit status),
    ``protocol_version``, ``starts`` (successful starts), ``next_attempt`` (clock time of the next try, while
    waiting) and ``checks`` (health checks done); ``wait_until`` waits for a change.
    """

    def __init__(
        self,
        spec: ServerSpec,
        *,
        clock: Clock,
        stderr_log: Path,
        logger: logging.Logger | None = None,
        backoff: Backoff = Backoff(),
    ):
        self.spec = spec
        self.clock = clock
        self.backoff = backoff
        self.logger = logger or logging.getLogger(f"ishiki.ext.mcp.{spec.name}")
        self.state: State = "starting"
        self.error: str | None = None
        self.protocol_version: str | None = None
        self.listing = Listing()
        self.starts = 0
        self.failures = 0
        self.checks = 0
        self.next_attempt: float | None = None
        self.transport: StdioTransport | HttpTransport
        if spec.transport == "stdio":
            self.transport = StdioTransport(spec, stderr_log, self._lost, self._notify)
        else:
            self.transport = HttpTransport(spec, self._lost)
        self._client: Client | None = None
        self._changed = anyio.Event()
        self._ready = anyio.Event()
        self._first_attempt = anyio.Event()
        self._done = anyio.Event()
        self._interrupt = anyio.Event()
        self._reason = ""
        self._noise = 0
        self._stopping = False
        self._stop = anyio.Event()
        self._dirty = anyio.Event()
        self._probe = anyio.Event()
        self._attempt_scope: anyio.CancelScope | None = None

    # -- what others read ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The server's name in ``mcp.json``."""
        return self.spec.name

    @property
    def info(self) -> ProcessInfo:
        """The current (or last) process: pid and exit status (empty for HTTP servers)."""
        return self.transport.info

    def stop_requested(self) -> bool:
        """Whether ``stop()`` was called (a method: the flag changes while the supervisor awaits)."""
        return self._stopping

    @property
    def offers_tools(self) -> bool:
        """Whether its tools are offered: ready, or restarting with a listing from before."""
        return self.state in ("ready", "restarting")

    async def wait_until(self, predicate: Callable[[ServerRunner], bool]) -> None:
        """Return once ``predicate(self)`` holds (checked at every change; wrap it in a deadline)."""
        while not predicate(self):
            await self._changed.wait()

    async def first_attempt(self) -> None:
        """Return once the first start attempt has succeeded or failed."""
        await self._first_attempt.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # -- supervisor ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """The supervisor loop; returns after ``stop()``. Never raises (failures are state)."""
        try:
            while not self._stopping:
                await self._attempt()
                self._first_attempt.set()
                if self.stop_requested():
                    break
                delay = self.backoff.delay(self.failures)
                self.next_attempt = self.clock.now() + delay
                self.logger.warning("MCP server %s: %s; next attempt in %g s", self.name, self.error, delay)
                self._notify()
                await self._sleep_unless_stopped(delay)
                self.next_attempt = None
        except Exception:  # pragma: no cover - a bug here must not kill the host's loop
            self.logger.exception("MCP server %s: supervisor failed", self.name)
        finally:
            self._client = None
            self.state = "stopped"
            self._first_attempt.set()
            self._done.set()
            self._notify()

    async def _attempt(self) -> None:
        self._interrupt = anyio.Event()
        self._reason = ""
        self._noise = 0
        self.transport.fast_stop = False
        was_up = False
        up_since = 0.0
        try:
            with anyio.CancelScope() as scope:
                self._attempt_scope = scope
                async with anyio.create_task_group() as tg:
                    watchdog = anyio.CancelScope()
                    tg.start_soon(self._startup_watchdog, watchdog, scope)
                    async with Client(
                        self.transport.connect(),
                        mode="auto",
                        message_handler=self._on_message,
                        client_info=CLIENT_INFO,
                        cache=None,
                    ) as client:
                        listing = await list_all(client)
                        watchdog.cancel()
                        was_up, up_since = True, self.clock.monotonic()
                        await self._serve(client, listing)
            if scope.cancelled_caught and not self._stopping:
                raise StartFailed(f"no answer within startup_timeout_ms ({self.spec.startup_timeout_ms} ms)")
        except Exception as exc:
            self._record_failure(exc, was_up)
            return
        finally:
            self._attempt_scope = None
            self._down()
        if not self._stopping:
            uptime = self.clock.monotonic() - up_since
            self.failures = 1 if uptime >= self.backoff.stable else self.failures + 1
            self.error = self._why_down()
            self.state = "restarting"

    async def _startup_watchdog(self, own: anyio.CancelScope, attempt: anyio.CancelScope) -> None:
        with own:
            await self.clock.sleep(self.spec.startup_timeout)
            self.transport.fast_stop = True
            attempt.cancel()

    async def _serve(self, client: Client, listing: Listing) -> None:
        self._client = client
        self.listing = listing
        self.protocol_version = client.protocol_version
        self.starts += 1
        self.state, self.error = "ready", None
        self._ready.set()
        self._first_attempt.set()
        self.logger.info("MCP server %s ready (%s; %d tools)", self.name, self.info_text(), len(listing.tools))
        self._notify()
        async with anyio.create_task_group() as helpers:
            helpers.start_soon(self._refresher, client)
            helpers.start_soon(self._health_checks, client)
            caps = client.server_capabilities
            listens = bool((caps.tools and caps.tools.list_changed) or (caps.resources and caps.resources.list_changed))
            if listens and client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                helpers.start_soon(self._listen, client)
            await self._interrupt.wait()
            self._down()
            if self._reason == "hung":
                self.transport.fast_stop = True
            helpers.cancel_scope.cancel()

    def _down(self) -> None:
        self._client = None
        if self._ready.is_set():
            self._ready = anyio.Event()

    def _record_failure(self, exc: BaseException, was_up: bool) -> None:
        self.failures += 1
        why = _describe(exc)
        tail = self.transport.stderr_tail()
        exit_text = self.info.exit_text() if self.info.pid else ""
        details = "; ".join(part for part in (exit_text, f"stderr: {tail}" if tail else "") if part)
        verb = "start" if self.spec.transport == "stdio" else "connect"
        self.error = f"{'stopped serving' if was_up else f'failed to {verb}'}: {why}" + (
            f" ({details})" if details else ""
        )
        self.state = "restarting" if self.starts else "failed"

    def _why_down(self) -> str:
        if self._reason == "hung":
            return f"stopped answering (a health check got no answer within {self._probe_seconds():g} s); killed"
        if self.spec.transport == "stdio":
            return f"the server process {self.info.exit_text()}"
        return "the connection was lost"

    def info_text(self) -> str:
        """``pid 1234`` for a process, the URL for a remote server."""
        return f"pid {self.info.pid}" if self.spec.transport == "stdio" else str(self.spec.url)

    async def _sleep_unless_stopped(self, seconds: float) -> None:
        async with anyio.create_task_group() as tg:

            async def wake_on_stop() -> None:
                await self._stop.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(wake_on_stop)
            await self.clock.sleep(seconds)
            tg.cancel_scope.cancel()

    def _lost(self) -> None:
        self._interrupt_with("lost")

    def _interrupt_with(self, reason: str) -> None:
        if not self._interrupt.is_set():
            self._reason = reason
            self._interrupt.set()

    async def stop(self) -> None:
        """Stop the server (gracefully when it is up) and wait for the supervisor to end (bounded)."""
        self._stopping = True
        self._stop.set()
        if self._client is None and self._attempt_scope is not None:
            self._attempt_scope.cancel()
        self._interrupt_with("stop")
        with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_SECONDS):
            await self._done.wait()

    # -- while connected ------------------------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            # Servers that print logs on stdout send this on every line: say it once per connection.
            self._noise += 1
            level = logging.WARNING if self._noise == 1 else logging.DEBUG
            more = " (more are logged at debug level)" if self._noise == 1 else ""
            self.logger.log(level, "MCP server %s sent something that is not MCP%s: %s", self.name, more, message)
        elif isinstance(message, types.ToolListChangedNotification | types.ResourceListChangedNotification):
            self._dirty.set()
        elif isinstance(message, types.LoggingMessageNotification):
            self.logger.debug("MCP server %s: %s", self.name, message.params.data)

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True, resources_list_changed=True) as subscription:
                async for _event in subscription:
                    self._dirty.set()
        except Exception as exc:
            self.logger.debug("MCP server %s: change subscription ended: %s", self.name, exc)

    async def _refresher(self, client: Client) -> None:
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            try:
                listing = await run_with_deadline(self.clock, self.spec.timeout, lambda: list_all(client))
            except Exception as exc:
                self.logger.warning("MCP server %s: listing after a change failed: %s", self.name, _describe(exc))
                continue
            self.listing = listing
            self.logger.info("MCP server %s: listing changed (%d tools)", self.name, len(listing.tools))
            self._notify()

    def _probe_seconds(self) -> float:
        return min(self.spec.timeout, PROBE_SECONDS)

    async def _health_checks(self, client: Client) -> None:
        while True:
            await self._probe.wait()
            self._probe = anyio.Event()
            try:
                await run_with_deadline(self.clock, self._probe_seconds(), lambda: client.list_tools())
            except TimeoutError:
                self.logger.warning("MCP server %s does not answer a health check; restarting it", self.name)
                self._interrupt_with("hung")
            except Exception as exc:
                self.logger.debug("MCP server %s: health check failed: %s", self.name, _describe(exc))
            self.checks += 1
            self._notify()

    # -- calls ------------------------------------------------------------------------------------------

    async def connected(self) -> Client:
        """The live client; waits (within the call timeout) while the server restarts."""
        if self._client is not None:
            return self._client
        if self.state != "restarting":
            raise ServerUnavailable(f"MCP server '{self.name}' is not running: {self.error or self.state}")
        try:
            await run_with_deadline(self.clock, self.spec.timeout, self._ready.wait)
        except TimeoutError:
            raise ServerUnavailable(
                f"MCP server '{self.name}' is restarting ({self.error}) and was not back within {self.spec.timeout:g} s"
            ) from None
        return self._live_client()

    def _live_client(self) -> Client:
        if self._client is None:
            raise ServerUnavailable(f"MCP server '{self.name}' is not running: {self.error or self.state}")
        return self._client

    async def request(self, what: str, fn: Callable[[Client], Awaitable[T]]) -> T:
        """Run ``fn(client)`` under the call timeout; failures become ``ServerUnavailable``/``CallError``."""
        client = await self.connected()
        try:
            return await run_with_deadline(self.clock, self.spec.timeout, lambda: fn(client))
        except TimeoutError:
            self._probe.set()
            raise CallTimedOut(
                f"MCP server '{self.name}' did not answer {what} within {self.spec.timeout:g} s (timeout_ms); "
                "the call was cancelled"
            ) from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._lost()
                if self.spec.transport == "stdio":
                    why = "closed the connection during {} (it exited or crashed); it is being restarted"
                else:
                    why = "lost the connection during {}; reconnecting"
                raise ServerUnavailable(f"MCP server '{self.name}' " + why.format(what)) from exc
            raise CallError(
                f"MCP server '{self.name}' answered {what} with an error: {exc.error.message}", exc.code
            ) from exc
        except Exception as exc:
            raise CallError(f"MCP server '{self.name}' failed {what}: {_describe(exc)}", None) from exc


def _describe(exc: BaseException) -> str:
    """One line for an exception, looking inside the exception groups task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, StartFailed):
        return str(exc)
    if isinstance(exc, MCPError):
        if exc.code == types.CONNECTION_CLOSED:
            return "the connection closed before the server answered"
        return f"{exc.error.message} (code {exc.code})"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
