"""Running one turn: steps, write-ahead logging of each step's batch, and the turn's end.

Within a step the assistant message is appended as soon as the model answers, then each tool result right
after its tool finishes (tools of a step run one after the other). The batch is synced before anything else
is appended or the model is called again; the last step's batch shares the turn end's sync. Entries sent to
the running turn are appended only after the batch, so an assistant message and its tool results stay one
contiguous run of lines. The turn's end (``turn.done`` / ``turn.failed`` / ``turn.aborted``) is written in a
shielded scope, so an abort or a shutdown still leaves every tool call answered and the turn closed.

Streaming: when the owner's ``stream_for(step)`` returns a ``StepStream`` for a step, the model is called with
``stream`` instead of ``generate``; the sink gets each text delta as it comes (and a word when a tool call
starts), and the ``StreamDone``'s result becomes ``step.result`` exactly as ``generate``'s would. Without a
sink nothing is streamed. A turn that fails or is aborted while a step streamed records the text the sink
was given in its end entry (``partial_reply``), since a person may have seen it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ishiki_host.core.hooks import Stop
from ishiki_host.core.levels import CONTENT_TRUST
from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.model import ModelRequest, ModelResult, StreamDone, StreamEvent, TextDelta, ToolCallDelta, Usage
from ishiki_host.core.tools import trust_allows
from ishiki_host.core.turns import Step, Turn, TurnHandle, TurnOutcome, TurnSetup, TurnStatus
from ishiki_host.errors import ModelBadRequest, ModelError, ToolConflictError

if TYPE_CHECKING:
    from ishiki_host.core.bus import EventBus
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.hooks import HookChain
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.core.tool_calls import ToolCaller
    from ishiki_host.core.turns import Delivery

__all__ = ["Inbox", "Running", "SetupFn", "StepStream", "StreamFor", "TurnRunner"]

logger = logging.getLogger(__name__)

SetupFn = Callable[[Turn], Awaitable[TurnSetup] | TurnSetup]
"""Called at the start of every turn; returns that turn's system prompt and tools."""


class StepStream(Protocol):
    """Where a streamed step's text goes as the model writes it (a channel's draft of the reply).

    Both methods are synchronous and must not block or raise: they run between two events of the stream.
    """

    def text(self, delta: str) -> None:
        """A piece of the step's text, in order."""
        ...

    def tool_call(self) -> None:
        """The model started a tool call (so the text will not be the reply)."""
        ...


StreamFor = Callable[[Step], StepStream | None]
"""Asked before each step's model call (after ``prepare_step``): a sink streams the step, ``None`` does not."""

_END_EVENT = {"done": "turn.done", "failed": "turn.failed", "aborted": "turn.aborted"}
_FINISH_SECONDS = 300.0  # the most closing a turn that ended on its own may take (the log, the end event)


@dataclass(eq=False)
class Inbox:
    """Entries sent while a turn runs: ``held`` join it after the current batch, ``deferred`` wait for its end.

    ``write_lock`` orders an entry appended at once by an idle ``send`` before a turn's first entry (free, it
    is taken without a trip through the event loop: ``fast_acquire``).
    """

    held: list[Delivery] = field(default_factory=list)
    deferred: list[Delivery] = field(default_factory=list)
    write_lock: anyio.Lock = field(default_factory=lambda: anyio.Lock(fast_acquire=True))


@dataclass(eq=False)
class Running:
    """The live state of the turn being run."""

    turn: Turn
    handle: TurnHandle
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    abort_reason: str | None = None
    resume: bool = False  # aborted because the host stops: the next start re-decides its messages
    finalizing: bool = False
    pending_calls: list[tuple[ToolCall, Step]] = field(default_factory=list)
    unannounced: list[Entry] = field(default_factory=list)
    unseen: list[Delivery] = field(default_factory=list)
    floor: int = 0
    """The newest entry appended before the turn began. The turn may start while its fsync is under way
    (``Agent.send``); it acts on a model's answer (tool calls, a text reply) only once this is durable, so
    nothing leaves the host for a message a power loss could take back."""
    streamed: list[str] | None = None
    """The text a streaming step gave its sink so far; ``None`` once its assistant message is in the log."""


class TurnRunner:
    """Runs turns for one agent (the agent owns the queue; this owns what happens inside a turn)."""

    def __init__(
        self,
        *,
        log: FactLogProtocol,
        model: LanguageModel,
        setup: SetupFn,
        hooks: HookChain,
        bus: EventBus,
        caller: ToolCaller,
        inbox: Inbox,
        max_steps: int,
        shutdown_grace: float,
        set_current: Callable[[Running | None], None],
        retrigger: Callable[[list[Delivery]], Awaitable[None]],
        stream_for: StreamFor | None = None,
    ):
        self._log = log
        self._model = model
        self._setup = setup
        self._hooks = hooks
        self._bus = bus
        self._caller = caller
        self._inbox = inbox
        self._max_steps = max_steps
        self._grace = shutdown_grace
        self._set_current = set_current
        self._retrigger = retrigger
        self._stream_for = stream_for

    async def run(self, running: Running) -> TurnOutcome:
        """Run ``running.turn`` to its end; a cancellation from outside ends it as ``aborted`` and re-raises."""
        self._set_current(running)
        outcome: TurnOutcome | None = None
        try:
            with running.scope:
                await self._start(running)
                outcome = await self._steps(running)
        except Exception as exc:
            outcome = self._failed(running, exc)
        except anyio.get_cancelled_exc_class():
            running.resume = True
            await self._finish(running, self._aborted(running, running.abort_reason or "shutdown"))
            raise
        if outcome is None:
            outcome = self._aborted(running, running.abort_reason or "aborted")
        return await self._finish(running, outcome)

    async def _start(self, running: Running) -> None:
        turn = running.turn
        start = {"name": "turn.start", "priority": turn.priority, "triggers": turn.triggers}
        async with self._inbox.write_lock:
            running.floor = self._log.last_id
            await self._log.append("event", start, turn=turn.number)
            if turn.prompt is not None:
                prompt = {**Message.user(turn.prompt).to_dict(), "wake": True}
                running.unannounced.append(await self._log.append("message", prompt, turn=turn.number))
        await self._bus.emit("turn.start", turn=turn)

    async def _steps(self, running: Running) -> TurnOutcome:
        turn = running.turn
        setup = await self._turn_setup(turn)
        offered = [tool for tool in setup.tools if trust_allows(setup.trust, tool.trust)]
        for index in range(1, self._max_steps + 1):
            step = Step(turn, index, list(offered), setup.tool_choice, setup.max_tokens, setup.temperature)
            turn.steps.append(step)
            running.unseen.clear()  # whatever joined before this point is in the log this step reads
            await self._call_model(running, step, setup)
            await self._record(running, step)
            if self._inbox.held:
                await self._admit_joined(running, step)
            await self._bus.emit("turn.step", step=step)
            reason = await self._decide(step)
            if reason is not None:
                return self._done(running, reason)  # the turn's end syncs this batch with it
            await self._admit_joined(running, step)
        return self._done(running, "max_steps")

    async def _admit_joined(self, running: Running, step: Step) -> None:
        """Make the batch durable and announce it, then append what joined the turn meanwhile."""
        await self._announce(running)
        step.joined.extend(await self._flush_held(running))

    async def _turn_setup(self, turn: Turn) -> TurnSetup:
        setup = self._setup(turn)
        if inspect.isawaitable(setup):
            setup = await setup
        if not isinstance(setup, TurnSetup):
            raise TypeError(f"the agent's setup returned {type(setup).__name__}, not TurnSetup")
        seen: set[str] = set()
        for tool in setup.tools:
            if tool.name in seen:
                raise ToolConflictError(f"two tools of turn {turn.number} are named {tool.name!r}")
            seen.add(tool.name)
        turn.setup = setup
        return setup

    async def _call_model(self, running: Running, step: Step, setup: TurnSetup) -> None:
        entries = await self._hooks.select_entries(self._log, step)
        step.entries = await self._hooks.transform_entries(entries, step)
        messages = await self._hooks.project(step.entries, step)
        if setup.system:
            messages = [Message.system(setup.system), *messages]
        step.messages = await self._hooks.transform_messages(messages, step)
        await self._hooks.prepare_step(step)
        step.request = ModelRequest(
            messages=tuple(step.messages),
            tools=tuple(tool.spec() for tool in step.tools),
            tool_choice=step.tool_choice,
            max_tokens=step.max_tokens,
            temperature=step.temperature,
            priority=step.turn.priority,
        )
        sink = self._stream_for(step) if self._stream_for is not None else None
        if sink is None:
            step.result = await self._model.generate(step.request)
        else:
            step.result = await self._stream(running, step.request, sink)
        step.turn.usage = _add_usage(step.turn.usage, step.result.usage)

    async def _stream(self, running: Running, request: ModelRequest, sink: StepStream) -> ModelResult:
        """``model.stream``, its text fed to ``sink``; the ``StreamDone``'s result. The stream is closed on any
        way out (an abort, a failure), so its connection goes back at once."""
        shown = running.streamed = []
        events = self._model.stream(request)
        try:
            async for event in events:
                if isinstance(event, TextDelta):
                    if event.text:
                        shown.append(event.text)
                        sink.text(event.text)
                elif isinstance(event, ToolCallDelta):
                    sink.tool_call()
                elif isinstance(event, StreamDone):
                    return event.result
        finally:
            await _aclose(events)
        raise ModelBadRequest("stream ended without a result", model=self._model.name)

    async def _record(self, running: Running, step: Step) -> None:
        """Write-ahead: the assistant message as soon as the model answered, each result as its tool ends."""
        assert step.result is not None
        await self._log.sync(upto=running.floor)
        result, number = step.result, step.turn.number
        level = step.turn.trust
        data = {
            **result.message().to_dict(),
            "usage": result.usage.to_dict(),
            "model": result.model or self._model.name,
            "finish_reason": result.finish_reason,
            CONTENT_TRUST: level,
        }
        with anyio.CancelScope(shield=True):
            assistant = await self._log.append("message", data, turn=number)
            running.streamed = None  # the text is in the log now, no longer a partial reply
            running.pending_calls = [(call, step) for call in result.tool_calls]
        step.appended.append(assistant)
        running.unannounced.append(assistant)
        for call in result.tool_calls:
            record = await self._caller.call(call, step)
            content = Message.tool(call, record.result.content, is_error=record.result.is_error).to_dict()
            content[CONTENT_TRUST] = step.turn.trust  # the level may have dropped while the tool ran
            with anyio.CancelScope(shield=True):
                entry = await self._log.append("message", content, turn=number)
                running.pending_calls.pop(0)
            step.calls.append(replace(record, entry=entry))
            step.appended.append(entry)
            running.unannounced.append(entry)

    async def _announce(self, running: Running) -> None:
        """Sync, then emit ``message.appended`` for the turn's new entries (shielded: none is skipped)."""
        with anyio.CancelScope(shield=True):
            await self._log.sync()
            entries, running.unannounced = running.unannounced, []
            for entry in entries:
                await self._bus.emit("message.appended", entry=entry, joined=False)

    async def _flush_held(self, running: Running) -> list[Entry]:
        """Append the entries sent to this turn since its last batch; the turn sees them at its next step."""
        with anyio.CancelScope(shield=True):
            held, self._inbox.held = self._inbox.held, []
            entries = await _append_deliveries(self._log, held)
            running.unseen.extend(held)
            for entry in entries:
                await self._bus.emit("message.appended", entry=entry, joined=True)
        return entries

    async def _decide(self, step: Step) -> str | None:
        decision = await self._hooks.on_step_finish(step)
        if decision == "continue":
            return None
        if decision == "stop":
            return "stop_hook"
        if isinstance(decision, Stop):
            return decision.reason
        assert step.result is not None
        return None if step.result.tool_calls else "no_tool_calls"

    # -- the end of a turn -----------------------------------------------------------------------------

    def _done(self, running: Running, reason: str) -> TurnOutcome:
        return self._outcome(running, "done", reason)

    def _failed(self, running: Running, exc: Exception) -> TurnOutcome:
        if isinstance(exc, ModelError | ToolConflictError):
            logger.warning("turn %s failed: %s: %s", running.turn.number, type(exc).__name__, exc)
        else:
            logger.error("turn %s failed", running.turn.number, exc_info=exc)
        return self._outcome(running, "failed", type(exc).__name__, error=exc)

    def _aborted(self, running: Running, reason: str) -> TurnOutcome:
        return self._outcome(running, "aborted", reason)

    def _outcome(
        self, running: Running, status: TurnStatus, reason: str, *, error: Exception | None = None
    ) -> TurnOutcome:
        turn = running.turn
        last = turn.steps[-1].result if turn.steps else None
        return TurnOutcome(turn.number, status, reason, len(turn.steps), error, last, turn.usage)

    async def _finish(self, running: Running, outcome: TurnOutcome) -> TurnOutcome:
        """Close the turn in the log, let queued entries in, then tell everyone how it ended.

        Only a turn aborted because the agent stops is bounded by the shutdown grace (a stuck disk must not
        hold the host's exit). Any other end gets ``_FINISH_SECONDS``: a loaded host may take longer than the
        grace to sync the log, and cutting this short would leave the turn unannounced (its runtime would
        never be idle again).
        """
        running.finalizing = True
        bound = self._grace if running.resume else max(self._grace, _FINISH_SECONDS)
        with anyio.CancelScope(shield=True), anyio.move_on_after(bound):
            try:
                await self._close_in_log(running, outcome)
            except Exception:
                logger.exception("could not close turn %s in %s", outcome.turn, self._log.where)
            unseen = await self._leave(running)
            outcome = replace(outcome, unseen=tuple(d.entry for d in unseen if d.entry is not None))
            await self._retrigger([d for d in unseen if d.trigger])
            await self._bus.emit(_END_EVENT[outcome.status], outcome=outcome)
            await self._hooks.on_turn_finish(outcome)
        self._set_current(None)  # already done by _leave, unless the grace ran out first
        running.handle._resolve(outcome)
        # Each step points back at its turn: a cycle only the garbage collector would free, with every request
        # and result of the turn in it. Letting the steps go frees them as soon as nothing else holds them.
        running.turn.steps.clear()
        return outcome

    async def _close_in_log(self, running: Running, outcome: TurnOutcome) -> None:
        number = running.turn.number
        for call, _step in running.pending_calls:
            message = f"aborted: the turn ended ({outcome.reason}) before this tool call finished"
            content = Message.tool(call, message, is_error=True).to_dict()
            running.unannounced.append(await self._log.append("message", content, turn=number))
        running.pending_calls = []
        if self._inbox.held:
            await self._announce(running)
            await self._flush_held(running)
        end = _end_data(outcome)
        if running.streamed and outcome.status in ("failed", "aborted"):
            end["partial_reply"] = "".join(running.streamed)  # what a person may have seen of the reply
        running.streamed = None
        if outcome.status == "aborted" and running.resume:
            end["resume"] = True
        await self._log.append("event", end, turn=number)
        await self._announce(running)

    async def _leave(self, running: Running) -> list[Delivery]:
        """Append what waited for the turn's end, then mark the agent idle; returns the unseen deliveries."""
        unseen = list(running.unseen)
        late: list[Delivery] = []
        while True:
            async with self._inbox.write_lock:
                held, deferred = self._inbox.held, self._inbox.deferred
                if not held and not deferred:
                    self._set_current(None)
                    break
                self._inbox.held, self._inbox.deferred = [], []
                batch = held + deferred
                try:
                    await _append_deliveries(self._log, batch)
                except Exception:
                    logger.exception("could not append entries sent during turn %s", running.turn.number)
                    continue
            unseen.extend(held)
            late.extend(batch)
        for delivery in late:
            if delivery.entry is not None:
                joined = delivery.mode == "join"
                await self._bus.emit("message.appended", entry=delivery.entry, joined=joined)
        await self._retrigger([d for d in late if d.trigger and d.mode == "defer"])
        return unseen


async def _append_deliveries(log: FactLogProtocol, deliveries: list[Delivery]) -> list[Entry]:
    """Append sent entries (outside any turn: durable at once) and resolve their deliveries."""
    if not deliveries:
        return []
    try:
        entries = await log.append_many([("message", d.data) for d in deliveries])
    except Exception as exc:
        for delivery in deliveries:
            delivery._fail(exc)
        raise
    for delivery, entry in zip(deliveries, entries, strict=True):
        delivery._resolve(entry)
    return entries


def _end_data(outcome: TurnOutcome) -> dict[str, Any]:
    data: dict[str, Any] = {"name": _END_EVENT[outcome.status], "reason": outcome.reason, "steps": outcome.steps}
    if outcome.status == "failed" and outcome.error is not None:
        data["error"] = type(outcome.error).__name__
        data["message"] = str(outcome.error)[:2000]
        if outcome.kind is not None:
            data["kind"] = outcome.kind
    if outcome.usage != Usage():
        data["usage"] = outcome.usage.to_dict()
    return data


async def _aclose(events: AsyncIterator[StreamEvent]) -> None:
    """End an async generator now, not when it is collected (its HTTP response goes back to the pool)."""
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


def _add_usage(total: Usage, more: Usage) -> Usage:
    return Usage(
        total.input_tokens + more.input_tokens,
        total.output_tokens + more.output_tokens,
        total.estimated or more.estimated,
    )
