"""The life of one runtime: start, serve, stop, and the bookkeeping in between.

Start, in order: take the home (``HomeLocks``), open the fact log, build the resource center and the kernel
tools, create the engine instances (context, toolcall, wakeup) and the extension instances, build the agent
and the session manager, start the agent (it repairs the log after a crash), attach the extensions, build the
command table (built-ins and the extensions' commands), then attach the wakeup engine, and re-run
the wake decision for what a crashed or stopped turn left unanswered, and for input the host made durable but
died before deciding on (``ishiki_host.host.resume``). Any failure before ``ready`` undoes what was done
and raises ``RuntimeStartFailed``.

Stop, always (a requested stop, eviction, reload, host exit, or cancellation): refuse input, clear the
waiter, let deliveries in progress be decided on and turns and the work after them (which may queue a retry)
finish for the grace (then abort the turns: the log marks them to be resumed; queued turns the stop drops leave
the marker out), wait for the rest of the background work within the grace, call every extension's
``ishiki_stop`` and dispose (reverse order), dispose the wakeup engine, write pending usage entries, append the
clean-stop marker (``runtime.stop``) and close the log. A turn that could not write the log (``log_failed``: a
full disk) stops the runtime at once and without the marker, so its next start recovers from what the log holds.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ishiki_host.core.agent import Agent
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.tokens import make_estimator
from ishiki_host.errors import AgentStopped, RuntimeStartFailed
from ishiki_host.gateway.attribution import TurnCallModel
from ishiki_host.resources import create_runtime_resources
from ishiki_host.runtime.images import ImageResolver
from ishiki_host.runtime.outbound import RuntimeOutbox
from ishiki_host.runtime.tail import STOP_EVENT, scan_tail
from ishiki_host.sessions.manager import SessionManager
from ishiki_host.sessions.summarizer import Summarizer
from ishiki_host.tools.kernel import make_finish_tool, make_send_message_tool, make_wait_tool
from ishiki_host.tools.read import make_read_tool

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from ishiki_host.addresses.ids import Target
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.tools import Tool
    from ishiki_host.core.turns import Turn
    from ishiki_host.resources import RuntimeResources
    from ishiki_host.runtime.parts import EngineUse
    from ishiki_host.runtime.runtime import AgentRuntime

__all__ = ["TYPING_INTERVAL", "Lifecycle"]

TYPING_INTERVAL = 4.0  # platforms show "typing" for about five seconds
_USAGE_BUFFER = 1_000
_SCAN_BACK = 500
T = TypeVar("T")  # entries read back at start to find unanswered input and the last channel
_token_estimator = functools.cache(make_estimator)  # tiktoken when usable offline, else the estimate; chosen once


class Lifecycle:
    """Start, stop and activity of one runtime (see the module docstring)."""

    def __init__(self, runtime: AgentRuntime, clock: Clock):
        self._rt = runtime
        self._clock = clock
        self.state = "new"
        self.log: FactLog | None = None
        self.resources: RuntimeResources | None = None
        self.outbox: RuntimeOutbox | None = None
        self.images: ImageResolver | None = None
        self.agent: Agent | None = None
        self.sessions: SessionManager | None = None
        self.kernel: tuple[Tool, ...] = ()
        self.wait: Tool | None = None
        self.last_target: Target | None = None
        self._tg: TaskGroup | None = None
        self._wakeup_dispose: Any = None
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

    def need(self, value: T | None, name: str) -> T:
        """``value`` (a part that exists once the runtime started); a clear ``AgentStopped`` before that."""
        if value is None:
            raise AgentStopped(f"runtime {self._rt.key}: its {name} does not exist yet (the runtime is {self.state})")
        return value

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
        agent = self.agent
        busy = agent is None or agent.busy or agent.queued or self._delivering or self._background
        if self.state != "ready" or busy or self._rt.waiter.armed or self._started != self._ended:
            return None
        return self._clock.monotonic() - self._last_active

    async def settled(self) -> None:
        """Until no turn runs or is queued and every started turn's end was handled."""
        while True:
            agent = self.agent
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
            self._rt.logger.debug("background work not started: runtime %s is stopping", self._rt.key)
            work.close()
            return
        self._background += 1
        self._tg.start_soon(self._run_background, work)

    async def background_done(self) -> None:
        """Until no work handed to ``background`` (``spawn``) is running."""
        while self._background:
            await self._changed.wait()

    async def _run_background(self, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except Exception:
            self._rt.logger.exception("background work of runtime %s failed", self._rt.key)
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
            connection = self._rt.host.outlets.connection(target.sid)
            with anyio.CancelScope() as scope:
                self._typing = scope
                while connection is not None and self._typing_target is target:
                    try:
                        await connection.send_typing(target.channel_id)
                    except Exception:
                        self._rt.logger.debug("typing indicator to %s failed", target, exc_info=True)
                    await self._clock.sleep(TYPING_INTERVAL)
            self._typing = None

    def record_usage(self, data: dict[str, Any]) -> None:
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
            self._rt.logger.warning("usage entry dropped: %s", data)

    async def _write_usage(self, stream: MemoryObjectReceiveStream[dict[str, Any]]) -> None:
        try:
            async with stream:
                async for data in stream:
                    try:
                        await self.need(self.log, "log").append("usage", data)
                    except Exception:
                        self._rt.logger.exception("could not append a usage entry")
        finally:
            self._usage_done.set()

    # -- start ------------------------------------------------------------------------------------------

    async def run(self, task_status: TaskStatus[None]) -> None:
        """The runtime's task: start, serve until stopped, always stop cleanly."""
        rt = self._rt
        async with rt.host.homes.hold(rt.home):
            failure: BaseException | None = None
            try:
                self.state = "starting"
                await self._open()
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    try:
                        await self._begin(tg)
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
                raise RuntimeStartFailed(f"runtime {rt.key} could not start: {failure}") from failure

    async def _open(self) -> None:
        rt, parts = self._rt, self._rt.parts
        self.log = await FactLog.open(rt.home / "facts.jsonl", fsync=rt.host.fsync, clock=self._clock)
        resources = create_runtime_resources(rt.home, clock=self._clock, fetchers=rt.host.fetchers)
        resources.assets.max_bytes = parts.profile.resources.max_asset_bytes
        self.resources = resources
        self.outbox = RuntimeOutbox(
            rt.key, parts.profile, rt.host.outlets, rt.bus, self._clock, lambda: rt.turn_state, lambda: self.last_target
        )
        self.images = ImageResolver(resources.center, accepts_images=parts.accepts_images)
        read = make_read_tool(resources.center, trust=lambda: rt.turn_state.trust)
        self.kernel = (read, make_send_message_tool(self.outbox), make_finish_tool())
        self.wait = make_wait_tool(rt.waiter)
        rt.context_engine = _create("context", parts.context, rt)
        rt.toolcall_engine = _create("toolcall", parts.toolcall, rt)
        rt.wakeup_engine = _create("wakeup", parts.wakeup, rt)
        for use, provider in parts.extensions:
            try:
                instance = provider.create(rt, use.config)
            except Exception as exc:
                raise RuntimeError(f"extension {use.name!r} failed to create its instance: {exc}") from exc
            rt.extensions.register(use.name, instance)
        model = rt.toolcall_engine.wrap(parts.model) if rt.toolcall_engine is not None else parts.model
        self.agent = Agent(
            self.log,
            TurnCallModel(model),
            rt.setup_turn,
            hooks=rt.hooks(),
            bus=rt.bus,
            clock=self._clock,
            max_steps=parts.profile.max_steps,
            shutdown_grace=rt.host.shutdown_grace,
        )
        estimator = _token_estimator()
        self.sessions = SessionManager(
            runtime_key=str(rt.key),
            profile=parts.profile.id,
            log=self.log,
            agent=self.agent,
            summarizer=Summarizer(TurnCallModel(parts.model), estimator=estimator),  # it logs its own usage
            estimator=estimator,
            trust_of=rt.turns.policy.of_entry,
        )

    async def _begin(self, tg: TaskGroup) -> None:
        rt = self._rt
        assert self.agent is not None
        assert self.log is not None
        tail = await self.log.read_back(scan_tail)
        self.last_target = tail.target
        rt.waiter.bind(tg)
        rt.turns.subscribe_early(rt.bus)
        await tg.start(self.agent.run)
        for engine in (rt.context_engine, rt.toolcall_engine, rt.wakeup_engine):
            run = getattr(engine, "run", None)  # an engine's own background task (summaries, judges)
            if run is not None and inspect.iscoroutinefunction(run):
                await tg.start(run)
        recovered = self.agent.recovered
        interrupted = list(recovered.unanswered) if recovered is not None and recovered.aborted_turn else []
        rt.seed_pending([*tail.pending, *interrupted])
        for name, instance in zip(rt.extensions.names, rt.extensions.instances, strict=True):
            await rt.extensions.attach(name, instance)
        await rt.gate.build()
        if rt.wakeup_engine is not None:
            self._wakeup_dispose = rt.wakeup_engine.attach(rt)
        rt.turns.subscribe_late(rt.bus)
        again = {e.id: e for e in [*interrupted, *tail.undecided]}
        if again and rt.wakeup_engine is not None:
            rt.logger.info("the host stopped before deciding on %d message(s); deciding now", len(again))
            await rt.wakeup_engine.reconsider([again[i] for i in sorted(again)])
        self._began = True

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
        self._rt.logger.error(
            "runtime %s stops: its fact log could not be written (%s); it resumes from the log at its next input",
            self._rt.key,
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
            self._rt.waiter.clear()
            await self._end_turns()
            with anyio.move_on_after(self._grace):
                while self._background:
                    await self._changed.wait()
            if self._typing is not None:
                self._typing.cancel()
            await self._release()

    async def _end_turns(self) -> None:
        agent = self.agent
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
        with anyio.move_on_after(self._rt.host.shutdown_grace + 5):
            await agent.stop(self._reason)

    async def _release(self) -> None:
        rt = self._rt
        try:
            await rt.extensions.stop_all()
        except Exception:
            rt.logger.exception("stopping the extensions of %s failed", rt.key)
        if self._wakeup_dispose is not None:
            try:
                result = self._wakeup_dispose()
                if hasattr(result, "__await__"):
                    await result
            except Exception:
                rt.logger.exception("the wakeup engine's dispose failed")
        self._usage_closed = True
        if self._usage_in is not None:
            self._usage_in.close()
            with anyio.move_on_after(5):
                await self._usage_done.wait()
        if self.log is not None:
            try:
                if self._began and not (self._log_failed or self._owes):  # the marker: all before it was decided
                    await self.log.append("event", {"name": STOP_EVENT, "reason": self._reason})
            except Exception:
                rt.logger.exception("could not mark the clean stop of %s in its fact log", rt.key)
            try:
                await self.log.close()  # always: a log left locked could never be opened again by this host
            except Exception:
                rt.logger.exception("closing the fact log of %s failed", rt.key)


def _create(kind: str, use: EngineUse | None, runtime: AgentRuntime) -> Any:
    if use is None:
        return None
    try:
        return use.provider.create(runtime, use.config)
    except Exception as exc:
        raise RuntimeError(f"{kind} engine {use.name!r} failed to create its instance: {exc}") from exc
