"""The agent: one fact log, one model, one turn at a time, a FIFO queue of turns.

The owner builds it and runs it in a task group it owns::

    agent = Agent(log, model, setup, hooks=[context_engine_hooks], bus=bus, clock=clock)
    await tg.start(agent.run)          # repairs the log after a crash, then reports ready
    await agent.send(message, trigger=False, if_busy="join")   # ingest only
    handle = await agent.continue_()   # queue a turn; ``await handle`` for its outcome

Input and turns are separate: ``send`` only appends (or holds the entry for the running turn), and a turn
starts only when someone calls ``continue_`` (or sends with ``trigger=True``). ``stop()`` aborts the running
turn, drops queued ones and makes ``run`` return.

``stream_for`` (optional) is asked before each step's model call whether someone wants the step's text as it
is written; a ``StepStream`` it returns makes that step stream (``ishiki_host.core.runner``).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import anyio

from ishiki_host.core.bus import EventBus
from ishiki_host.core.clock import Clock, SystemClock
from ishiki_host.core.hooks import AgentHooks, HookChain
from ishiki_host.core.messages import Message
from ishiki_host.core.recovery import recover
from ishiki_host.core.runner import Inbox, Running, SetupFn, StreamFor, TurnRunner
from ishiki_host.core.tool_calls import ToolCaller
from ishiki_host.core.turns import Delivery, Recovery, Turn, TurnHandle, TurnOutcome
from ishiki_host.errors import AgentBusy, AgentStopped, ToolError
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.messages import ToolCall
    from ishiki_host.core.model import LanguageModel, Priority
    from ishiki_host.core.tools import Tool
    from ishiki_host.core.turns import ToolCallRecord

__all__ = ["Agent", "BeforeTurn", "IfBusy"]

logger = logging.getLogger(__name__)

IfBusy = Literal["join", "defer", "reject"]
BeforeTurn = Callable[[], Awaitable[object]]
"""Work the owner does before each turn starts, while none runs (the runtime compacts a session over its
threshold there). ``wait_idle`` counts the agent as idle meanwhile; ``stop`` cancels it; an exception is
logged and the turn runs anyway."""
_ROLES = ("system", "user", "assistant", "tool")
_BLANK_PROMPT = "Continue."


class _Request:
    """A queued turn."""

    def __init__(self, handle: TurnHandle, prompt: str | None, trigger: dict[str, Json]):
        self.handle = handle
        self.prompt = prompt
        self.triggers = [trigger]


class Agent:
    """Runs turns over a fact log. See the module docstring for the life cycle and docs/factlog.md for the log."""

    def __init__(
        self,
        log: FactLogProtocol,
        model: LanguageModel,
        setup: SetupFn,
        *,
        hooks: Sequence[AgentHooks] = (),
        bus: EventBus | None = None,
        clock: Clock | None = None,
        max_steps: int = 20,
        tool_timeout: float | None = 300.0,
        shutdown_grace: float = 10.0,
        before_turn: BeforeTurn | None = None,
        stream_for: StreamFor | None = None,
    ):
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1; got {max_steps}")
        self.log = log
        self.model = model
        self.bus = bus or EventBus()
        self.clock = clock or SystemClock()
        self.max_steps = max_steps
        self.recovered: Recovery | None = None
        chain = HookChain(hooks)
        self._inbox = Inbox()
        self._caller = ToolCaller(chain, self.bus, self.clock, tool_timeout=tool_timeout)
        self._runner = TurnRunner(
            log=log,
            model=model,
            setup=setup,
            hooks=chain,
            bus=self.bus,
            caller=self._caller,
            inbox=self._inbox,
            max_steps=max_steps,
            shutdown_grace=shutdown_grace,
            set_current=self._set_current,
            retrigger=self._retrigger,
            stream_for=stream_for,
        )
        self._queue: deque[_Request] = deque()
        self._current: Running | None = None
        self._before_turn = before_turn
        self._preparing: anyio.CancelScope | None = None
        self._state: Literal["new", "starting", "ready", "stopping", "stopped"] = "new"
        self._stop_reason = "shutdown"
        self._ready = anyio.Event()
        self._stopped = anyio.Event()
        self._changed = anyio.Event()
        self._next_turn = 1

    # -- state -----------------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """Whether a turn is running."""
        return self._current is not None

    @property
    def current_turn(self) -> Turn | None:
        """The running turn, if any."""
        return self._current.turn if self._current else None

    @property
    def queued(self) -> int:
        """How many turns wait to start."""
        return len(self._queue)

    @property
    def state(self) -> str:
        """``new``, ``starting`` (repairing the log), ``ready``, ``stopping`` or ``stopped``."""
        return self._state

    def _set_current(self, running: Running | None) -> None:
        self._current = running
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # -- input -----------------------------------------------------------------------------------------

    async def send(
        self, message: Message | Mapping[str, Json], *, trigger: bool = False, if_busy: IfBusy = "join"
    ) -> Delivery:
        """Hand a message entry (``Message`` or the ``data`` of a message entry) to the agent.

        With no turn running it is appended now: ``message.appended`` is emitted as soon as it is written, so
        the wakeup decision and a turn's model call overlap its fsync, and the returned delivery is durable
        (a turn acts on its model's answer only once what came before the turn is durable: ``Running.floor``).
        With a turn running, ``if_busy`` decides: ``join`` appends it
        after the current step's batch (the turn sees it at its next step), ``defer`` after the turn ends,
        ``reject`` raises ``AgentBusy``. ``await delivery`` returns the entry once it is durable.
        ``trigger=True`` also queues a turn that will see it (a joined entry the turn never saw counts).
        """
        data = _message_data(message)
        if if_busy not in ("join", "defer", "reject"):
            raise ValueError(f"if_busy must be join, defer or reject; got {if_busy!r}")
        await self._until_ready()
        if self._current is None:
            delivery: Delivery | None = None
            async with self._inbox.write_lock:
                if self._current is None:  # re-checked: a turn may have started while we waited
                    delivery = Delivery(data, trigger=trigger, mode="now")
                    delivery._resolve(await self.log.append("message", data, sync=False))
            if delivery is not None and delivery.entry is not None:
                await self.bus.emit("message.appended", entry=delivery.entry, joined=False)
                if trigger:
                    await self._retrigger([delivery])
                await self.log.sync(upto=delivery.entry.id)
                return delivery
        return self._hold(data, trigger, if_busy)

    def _hold(self, data: dict[str, Json], trigger: bool, if_busy: IfBusy) -> Delivery:
        if if_busy == "reject":
            number = self._current.turn.number if self._current else "?"
            raise AgentBusy(f"the agent is running turn {number}; the entry was rejected (if_busy='reject')")
        delivery = Delivery(data, trigger=trigger, mode=if_busy)
        (self._inbox.held if if_busy == "join" else self._inbox.deferred).append(delivery)
        self._notify()
        return delivery

    async def continue_(
        self,
        prompt: str | None = None,
        *,
        priority: Priority = "interactive",
        reason: str | None = None,
        info: Mapping[str, Json] | None = None,
    ) -> TurnHandle:
        """Queue a turn; returns its handle (``handle.number`` now, ``await handle`` for the outcome).

        A string ``prompt`` is appended at the turn's start as a user message marked ``wake``; a blank one
        becomes "Continue.". ``None`` appends nothing, and joins the last queued turn if there is one (it will
        see everything appended before it starts). ``reason`` and ``info`` (JSON-able) are recorded as this
        call's trigger in ``turn.start`` and in ``Turn.triggers``, where ``setup`` can read them.
        """
        if prompt is not None and not prompt.strip():
            prompt = _BLANK_PROMPT
        trigger: dict[str, Json] = {"by": "continue", **(info or {})}
        if reason:
            trigger["reason"] = reason
        return await self._enqueue(prompt, priority, trigger)

    async def _retrigger(self, deliveries: list[Delivery]) -> None:
        if self._state != "ready":
            return  # stopping: the owner re-decides these after a restart (they are in the log)
        for delivery in deliveries:
            if delivery.entry is not None:
                await self._enqueue(None, "interactive", {"by": "message", "entry": delivery.entry.id})

    async def _enqueue(self, prompt: str | None, priority: Priority, trigger: dict[str, Json]) -> TurnHandle:
        await self._until_ready()
        if prompt is None and self._queue:
            request = self._queue[-1]
            request.triggers.append(trigger)
            if priority == "interactive":
                request.handle.priority = "interactive"
            return request.handle
        handle = TurnHandle(self._next_turn, priority)
        self._next_turn += 1
        self._queue.append(_Request(handle, prompt, trigger))
        self._notify()
        await self.bus.emit("turn.queued", handle=handle, priority=priority, prompt=prompt)
        return handle

    async def call_tool(self, call: ToolCall, tools: Sequence[Tool]) -> ToolCallRecord:
        """Answer a call made by a tool of the running step (a codemode program's ``tools.x(...)``).

        ``tools`` are the tools the caller may reach; the call goes through every check, hook, deadline and
        event of a model's call (``ToolCaller.call_within``). ``ToolError`` when no step is running.
        """
        running = self._current
        if running is None or not running.turn.steps:
            raise ToolError(f"{call.name}: no step is running; a tool may call other tools only during its own call")
        return await self._caller.call_within(call, running.turn.steps[-1], tools)

    # -- control ---------------------------------------------------------------------------------------

    def abort(self, reason: str = "aborted") -> bool:
        """End the running turn as ``turn.aborted`` with ``reason``; returns whether a turn was aborted."""
        return self._abort(reason, resume=False)

    def _abort(self, reason: str, *, resume: bool) -> bool:
        running = self._current
        if running is None or running.finalizing:
            return False
        running.abort_reason = reason
        running.resume = resume
        running.scope.cancel()
        return True

    def interrupt(self) -> bool:
        """``abort("interrupted")``: a person asked the agent to stop what it is doing."""
        return self.abort("interrupted")

    async def wait_idle(self) -> None:
        """Return once no turn runs, none is queued and no sent entry waits (wrap it in a deadline)."""
        while self._state not in ("new", "stopped") and (
            self._current or (self._queue and self._preparing is None) or self._inbox.held or self._inbox.deferred
        ):
            await self._changed.wait()

    async def stop(self, reason: str = "shutdown") -> None:
        """Abort the running turn, drop the queued ones and make ``run`` return. Idempotent.

        The aborted turn is marked ``resume`` in the log: the next start reports it in ``recovered`` like a
        crash, so its unanswered messages are decided again. Call ``wait_idle()`` first to let turns finish.
        """
        if self._state == "new":
            self._state = "stopped"
            self._stopped.set()
            return
        if self._state != "stopped":
            self._state = "stopping"
            self._stop_reason = reason
            self._abort(reason, resume=True)
            if self._preparing is not None:
                self._preparing.cancel()
            self._notify()
        await self._stopped.wait()

    async def _until_ready(self) -> None:
        if self._state == "starting":
            await self._ready.wait()
        if self._state == "new":
            raise AgentStopped("the agent is not running; start it first with `await tg.start(agent.run)`")
        if self._state in ("stopping", "stopped"):
            raise AgentStopped("the agent was stopped")

    # -- the loop --------------------------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Repair the log, report ready, then run queued turns one by one until stopped or cancelled."""
        if self._state != "new":
            raise AgentStopped(f"the agent cannot be run again (it is {self._state})")
        self._state = "starting"
        try:
            self.recovered = await recover(self.log)
            self._next_turn = self.recovered.last_turn + 1
            if self._state == "starting":
                self._state = "ready"
            self._ready.set()
            task_status.started()
            await self._loop()
        finally:
            self._shut_down()

    async def _loop(self) -> None:
        while self._state == "ready":
            if not self._queue:
                await self._changed.wait()
                continue
            await self._run_next()

    async def _run_next(self) -> None:
        # A method of its own so the turn is not a local of the loop: an idle agent would keep its last turn
        # (every step's request: the whole context window, the tool specs, the results) until the next one.
        if self._before_turn is not None:
            await self._prepare(self._before_turn)
            if self._state != "ready" or not self._queue:
                return  # stopped meanwhile: the queued turns are dropped by the shut-down
        request = self._queue.popleft()
        turn = Turn(request.handle.number, request.handle.priority, request.prompt, request.triggers)
        await self._runner.run(Running(turn, request.handle))

    async def _prepare(self, before_turn: BeforeTurn) -> None:
        """Run ``before_turn`` with the next turn still queued (requests may still merge into it)."""
        number = self._queue[0].handle.number
        scope = self._preparing = anyio.CancelScope()
        self._notify()  # wait_idle counts the agent idle while it prepares
        try:
            with scope:
                await before_turn()
        except Exception:
            logger.exception("the work before turn %s failed; the turn runs anyway", number)
        finally:
            self._preparing = None
            self._notify()

    def _shut_down(self) -> None:
        self._state = "stopped"
        self._ready.set()
        while self._queue:
            handle = self._queue.popleft().handle
            handle._resolve(TurnOutcome(handle.number, "dropped", self._stop_reason))
        for delivery in self._inbox.held + self._inbox.deferred:
            delivery._fail(AgentStopped("the agent stopped before this entry could be appended"))
        self._inbox.held.clear()
        self._inbox.deferred.clear()
        self._notify()
        self._stopped.set()


def _message_data(message: Message | Mapping[str, Json]) -> dict[str, Json]:
    """The ``data`` of a message entry, checked to be a message."""
    data = message.to_dict() if isinstance(message, Message) else dict(message)
    if data.get("role") not in _ROLES:
        raise ValueError(f"a message entry needs a role of {', '.join(_ROLES)}; got {data.get('role')!r}")
    try:
        Message.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"not a valid message entry: {exc}") from exc
    return data
