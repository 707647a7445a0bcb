"""The life of one runtime: its state, its activity, its background work, and the order it stops in.

``Lifecycle.run(task_status, open, begin, release)`` is the runtime's task. It takes the home (``HomeLocks``), calls
``open()`` (the runtime makes its parts and binds its log and agent here: ``bind_log``, ``bind_agent``), opens the
runtime's task group and calls ``begin(tg)`` (the runtime starts the agent, attaches its plugins and decides on what
it owes), reports ready, and serves until ``stop``. Any failure before ``ready`` undoes what was done and raises
``RuntimeStartFailed``.

Stop, always (a requested stop, eviction, reload, host exit, or cancellation): refuse input, clear the
waiter, let deliveries in progress be decided on and turns and the work after them (which may queue a retry)
finish for the grace (then abort the turns: the log marks them to be resumed; queued turns the stop drops leave
the marker out), wait for the rest of the background work within the grace, call ``release()`` (the runtime
stops its extensions and wakeup engine), write pending usage entries, append the clean-stop marker
(``runtime.stop``) and close the log. A turn that could not write the log (``log_failed``: a full disk) stops
the runtime at once and without the marker, so its next start recovers from what the log holds.

Activity: the runtime is idle (``idle_for``) only while no turn runs or is queued, no delivery or background
work is under way, no wait is armed and every started turn's end was handled. While an interactive turn runs,
the channel it answers shows typing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.errors import AgentStopped, RuntimeStartFailed
from ishiki_host.jsontypes import Json
from ishiki_host.runtime.tail import STOP_EVENT

if TYPE_CHECKING:
    import logging

    from anyio.abc import TaskGroup, TaskStatus
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from ishiki_host.addresses.ids import Target
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.agent import Agent
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.turns import Turn
    from ishiki_host.runtime.outbound import Outlets
    from ishiki_host.runtime.parts import HomeLocks
    from ishiki_host.runtime.waiter import Waiter

__all__ = ["TYPING_INTERVAL", "Lifecycle"]

TYPING_INTERVAL = 4.0  # platforms show "typing" for about five seconds
_USAGE_BUFFER = 1_000


class Lifecycle:
    """State, activity and stop of one runtime (see the module docstring)."""

    def __init__(
        self,
        key: RuntimeKey,
        logger: logging.Logger,
        clock: Clock,
        *,
        home: Path,
        homes: HomeLocks,
        waiter: Waiter,
        outlets: Outlets,
        shutdown_grace: float,
    ):
        self._key = key
        self._logger = logger
        self._clock = clock
        self._home = home
        self._homes = homes
        self._waiter = waiter
        self._outlets = outlets
        self._shutdown_grace = shutdown_grace
        self.state = "new"
        self._agent: Agent | None = None
        self._log: FactLogProtocol | None = None
        self._tg: TaskGroup | None = None
        self._release: Callable[[], Awaitable[None]] | None = None
        self._stop_requested = anyio.Event()
        self._closed = anyio.Event()
        self._changed = anyio.Event()
        self._reason = "shutdown"
        self._grace = 0.0
        self._shut = False
        self._began = False
        self._log_failed = False
        self._owes = False
        self._delivering = 0
        self._background = 0
        self._started = self._ended = 0
        self._last_active = clock.monotonic()
        self._typing: anyio.CancelScope | None = None
        self._typing_target: Target | None = None
        self._typing_wanted = anyio.Event()
        self._typing_started = False
        self._usage_closed = False
        self._usage_in: MemoryObjectSendStream[dict[str, Any]] | None = None
        self._usage_done = anyio.Event()

    def bind_log(self, log: FactLogProtocol) -> None:
        """The fact log the runtime opened: stopping marks and closes it (whatever fails after this)."""
        self._log = log

    def bind_agent(self, agent: Agent) -> None:
        """The runtime's agent: stopping ends its turns."""
        self._agent = agent

    # -- activity ---------------------------------------------------------------------------------------

    def _notify(self, *, active: bool = True) -> None:
        if active:
            self._last_active = self._clock.monotonic()
        self._changed.set()
        self._changed = anyio.Event()

    @contextlib.contextmanager
    def delivering(self) -> Iterator[None]:
        """Marks a delivery in progress (the runtime is not idle meanwhile)."""
        self._delivering += 1
        self._notify()
        try:
            yield
        finally:
            self._delivering -= 1
            self._notify()

    def idle_for(self) -> float | None:
        """Seconds since the last activity, ``None`` while anything is going on."""
        agent = self._agent
        busy = agent is None or agent.busy or agent.queued or self._delivering or self._background
        if self.state != "ready" or busy or self._waiter.armed or self._started != self._ended:
            return None
        return self._clock.monotonic() - self._last_active

    async def settled(self) -> None:
        """Until no turn runs or is queued and every started turn's end was handled."""
        while True:
            agent = self._agent
            if agent is not None and agent.state in ("ready", "starting"):
                await agent.wait_idle()
            agent_idle = agent is None or not (agent.busy or agent.queued)
            if agent_idle and self._ended >= self._started:
                return
            if self.state == "stopped":
                return
            await self._changed.wait()

    def turn_started(self, turn: Turn, target: Target | None) -> None:
        """Bookkeeping at a turn's start; keeps the channel's typing indicator on for interactive turns."""
        self._started += 1
        self._notify()
        if turn.priority == "interactive" and target is not None and self._tg is not None:
            if not self._typing_started:  # started with the first turn that needs it
                self._typing_started = True
                self._tg.start_soon(self._keep_typing)
            self._typing_target = target
            self._typing_wanted.set()

    def turn_ended(self) -> None:
        """Bookkeeping after a turn's end was handled."""
        self._typing_target = None
        if self._typing is not None:
            self._typing.cancel()
        self._ended += 1
        self._notify()

    def background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the runtime's task group; the runtime is not idle until it ends.

        Once the runtime is stopping, nothing new starts (``work`` is closed unrun).
        """
        if self._tg is None or self._shut or self.state == "stopped":
            self._logger.debug("background work not started: runtime %s is stopping", self._key)
            work.close()
            return
        self._background += 1
        self._tg.start_soon(self._run_background, work)

    async def background_done(self) -> None:
        """Until no work handed to ``background`` is running."""
        while self._background:
            await self._changed.wait()

    async def _run_background(self, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except Exception:
            self._logger.exception("background work of runtime %s failed", self._key)
        finally:
            self._background -= 1
            self._notify(active=False)  # idle time counts from the last input or turn, not from background work

    async def _keep_typing(self) -> None:
        """One task for the runtime's life: while an interactive turn runs, show typing every few seconds."""
        while True:
            await self._typing_wanted.wait()
            self._typing_wanted = anyio.Event()
            target = self._typing_target
            if target is None:
                continue
            connection = self._outlets.connection(target.sid)
            with anyio.CancelScope() as scope:
                self._typing = scope
                while connection is not None and self._typing_target is target:
                    try:
                        await connection.send_typing(target.channel_id)
                    except Exception:
                        self._logger.debug("typing indicator to %s failed", target, exc_info=True)
                    await self._clock.sleep(TYPING_INTERVAL)
            self._typing = None

    def record_usage(self, data: dict[str, Json]) -> None:
        """Queue a usage entry; dropped (with a warning) when the runtime is not running or far behind."""
        if self._tg is None or self._usage_closed:
            return
        if self._usage_in is None:  # the writer starts with the first entry: most runtimes never need it
            send, receive = anyio.create_memory_object_stream[dict[str, Any]](_USAGE_BUFFER)
            self._usage_in = send
            self._tg.start_soon(self._write_usage, receive)
        try:
            self._usage_in.send_nowait(data)
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._logger.warning("usage entry dropped: %s", data)

    async def _write_usage(self, stream: MemoryObjectReceiveStream[dict[str, Any]]) -> None:
        try:
            async with stream:
                async for data in stream:
                    try:
                        if self._log is None:
                            raise AgentStopped(f"runtime {self._key} has no open log")
                        await self._log.append("usage", data)
                    except Exception:
                        self._logger.exception("could not append a usage entry")
        finally:
            self._usage_done.set()

    # -- start ------------------------------------------------------------------------------------------

    async def run(
        self,
        task_status: TaskStatus[None],
        open: Callable[[], Awaitable[None]],
        begin: Callable[[TaskGroup], Awaitable[None]],
        release: Callable[[], Awaitable[None]],
    ) -> None:
        """The runtime's task: start, serve until stopped, always stop cleanly (see the module docstring)."""
        self._release = release
        async with self._homes.hold(self._home):
            failure: BaseException | None = None
            try:
                self.state = "starting"
                await open()
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    try:
                        await begin(tg)
                        self._began = True
                    except Exception as exc:
                        failure = exc
                        tg.cancel_scope.cancel()
                    else:
                        self.state = "ready"
                        self._notify()
                        task_status.started()
                        await self._stop_requested.wait()
                        await self._shutdown()
                        tg.cancel_scope.cancel()
            except Exception as exc:
                failure = exc
            finally:
                await self._shutdown()
                self.state = "stopped"
                self._notify()
                self._closed.set()
            if failure is not None:
                raise RuntimeStartFailed(f"runtime {self._key} could not start: {failure}") from failure

    # -- stop -------------------------------------------------------------------------------------------

    async def stop(self, reason: str, grace: float) -> None:
        """Ask the runtime to stop and wait until it has."""
        if self.state in ("new", "stopped"):
            return
        self._reason, self._grace = reason, grace
        self._stop_requested.set()
        await self._closed.wait()

    def log_failed(self, error: BaseException) -> None:
        """A turn could not write its fact log (a full disk, a failing device): the log no longer holds what
        the runtime knows, so the runtime stops now, without the clean-stop marker. Its next start (the next
        input, or the host's next start) recovers from the log: tool calls left without a result are answered
        as interrupted and the messages the turn left unanswered are decided on again."""
        if self._log_failed or self.state != "ready":
            return
        self._log_failed = True
        self._logger.error(
            "runtime %s stops: its fact log could not be written (%s); it resumes from the log at its next input",
            self._key,
            error,
        )
        self._reason, self._grace = "fact log failed", 0.0
        self._stop_requested.set()

    async def _shutdown(self) -> None:
        if self._shut:
            return
        self._shut = True
        with anyio.CancelScope(shield=True):
            self.state = "stopping"
            self._notify()
            self._waiter.clear()
            await self._end_turns()
            with anyio.move_on_after(self._grace):
                while self._background:
                    await self._changed.wait()
            if self._typing is not None:
                self._typing.cancel()
            await self._close()

    async def _end_turns(self) -> None:
        agent = self._agent
        if agent is None or agent.state not in ("ready", "starting"):
            return
        with anyio.move_on_after(self._grace):
            while self._delivering:  # an event made durable is decided on before the agent stops
                await self._changed.wait()
            await self.settled()
            while self._background:  # work after a turn (a retry after compaction) may queue another turn
                await self.background_done()
                await self.settled()
        # Still delivering, or turns queued that the stop drops: the log owes them a decision, so no clean-stop
        # marker (the next start decides on them; a running turn is marked to be resumed by the agent itself).
        self._owes = bool(self._delivering or agent.queued)
        with anyio.move_on_after(self._shutdown_grace + 5):
            await agent.stop(self._reason)

    async def _close(self) -> None:
        if self._release is not None:
            try:
                await self._release()
            except Exception:
                self._logger.exception("stopping the plugins of %s failed", self._key)
        self._usage_closed = True
        if self._usage_in is not None:
            self._usage_in.close()
            with anyio.move_on_after(5):
                await self._usage_done.wait()
        if self._log is not None:
            try:
                if self._began and not (self._log_failed or self._owes):  # the marker: all before it was decided
                    await self._log.append("event", {"name": STOP_EVENT, "reason": self._reason})
            except Exception:
                self._logger.exception("could not mark the clean stop of %s in its fact log", self._key)
            try:
                await self._log.close()  # always: a log left locked could never be opened again by this host
            except Exception:
                self._logger.exception("closing the fact log of %s failed", self._key)
