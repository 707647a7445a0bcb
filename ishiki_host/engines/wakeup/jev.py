"""The ``jev`` wakeup engine: rules, then a cooldown, then a judge model (see ``jev_model`` for the scoring).

``jev`` is the name the engine has in Ishiki, the system it comes from, kept so that its profiles carry over;
read it as "judge": a small model judges whether the bot is spoken to, or would be welcome, and its verdict
decides whether a turn starts.

For every inbound platform message (``_inbound``) appended outside a turn, and for every message a turn left
unseen or a crash left unanswered (``reconsider``):

1. **rules** (``direct``, ``at_self``) start a turn at once;
2. **cooldown**: if the bot sent in the message's channel (``message.sent``) less than ``cooldown_ms`` ago, wait;
3. **judge**: one background call (``priority="background"``, temperature 0) to the model named by ``model``
   (``ctx.models(ref)``; the profile's own model when unset) with the channel's last ``history_messages``
   messages read from the log (``_judge_history``). It runs in the instance's ``run`` task, never in the bus
   handler, so ingestion is not held up. The deadline ``timeout_ms`` runs on the runtime's clock. The turn
   starts iff the strictly parsed verdict reaches ``threshold``; a bad reply, a model error or a timeout
   means wait, with a warning in the host log.

Every judge call is recorded in the fact log as ``custom {"kind": "jev.judge", "entry", "channel", "trigger",
"reason", "score", "scores", "model", "ms", "detail"?}`` (and the call's tokens as a ``usage`` entry), written
once no turn runs so a turn's messages stay one contiguous run.

**One judge per channel.** A message that arrives while its channel's judge runs goes through the rules and the
cooldown at once; otherwise it is remembered, and when the running judge says *wait*, the judge is asked once
more with the latest history (any number of messages during one call make one more call). When the running
judge triggers, the turn it starts reads everything, so no second call is made. When a rule started a turn for
the channel while the judge ran, the verdict is recorded but starts nothing (that turn reads everything too).

The cooldown's clock is kept in memory: after a restart the first message is judged even if the bot spoke a
moment before.

An edit of a message (``source.extra.editedAt``) is not decided on (the judge sees it in the history of the
next call); a message in a group that needs no mention (``source.extra.mentionRequired: false``) counts as
mentioning the bot, so ``at_self`` applies (see ``_inbound``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from ishiki_host.core.clock import run_with_deadline
from ishiki_host.engines._options import model_option
from ishiki_host.engines.wakeup._inbound import channel_key, message_features, source_channel, wake_source
from ishiki_host.engines.wakeup._judge_history import chat_history
from ishiki_host.engines.wakeup.jev_model import (
    JEV_CONFIG_SCHEMA,
    JevDecision,
    JevOptions,
    build_judge_request,
    decide_after_judge,
    decide_before_judge,
    judge_failed,
)
from ishiki_host.errors import AgentStopped
from ishiki_host.plugins.base import WakeupEngine

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus

    from ishiki_host.core.bus import BusEvent
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.model import LanguageModel, ModelResult
    from ishiki_host.plugins.runtime_api import Dispose, RuntimeContext

__all__ = ["JevWakeup", "JevWakeupEngine"]

logger = logging.getLogger(__name__)

REASON = "wakeup.jev"
RECORD_KIND = "jev.judge"
_END_EVENTS = ("turn.done", "turn.failed", "turn.aborted")


class JevWakeupEngine(WakeupEngine):
    """Answers direct messages and mentions at once; asks a judge model about the rest, after a cooldown."""

    config_schema: ClassVar[Mapping[str, Any]] = JEV_CONFIG_SCHEMA

    def create(self, ctx: Any, config: Mapping[str, Any]) -> JevWakeup:
        """Make the engine instance for one runtime; an unknown judge ``model`` is a ``ConfigError`` now."""
        options = JevOptions.from_config(config)
        model_option(ctx, options.model, path="wakeup.jev.model")
        return JevWakeup(ctx, options)


@dataclass(eq=False)
class _Judging:
    """A channel's running judge: the newest message to judge, and whether one came during the call."""

    entry: Entry
    again: bool = False
    answered: bool = False  # a rule started a turn for the channel meanwhile: the verdict cannot add one


class JevWakeup:
    """One runtime's jev engine (see the module docstring); its ``run`` task makes the judge calls."""

    def __init__(self, ctx: RuntimeContext, options: JevOptions):
        self.ctx = ctx
        self.options = options
        self.last_sent: dict[str, float] = {}
        self._judging: dict[str, _Judging] = {}
        self._queued: list[str] = []
        self._records: list[tuple[str, dict[str, Any]]] = []
        self._tg: TaskGroup | None = None
        self._work = 0  # running judges, plus one while records wait to be written
        self._settled = anyio.Event()
        self._settled.set()
        self._warned = False

    @property
    def judge_model(self) -> LanguageModel:
        """The model the judge asks (``model``, else the profile's)."""
        return self.ctx.models(self.options.model) if self.options.model else self.ctx.model

    def attach(self, ctx: RuntimeContext) -> Dispose:
        """Subscribe to messages, sends and turn ends; returns the unsubscriber."""
        self.ctx = ctx
        unsubscribe = [
            ctx.bus.subscribe("message.appended", self._on_appended),
            ctx.bus.subscribe("message.sent", self._on_sent),
            *(ctx.bus.subscribe(name, self._on_turn_end) for name in _END_EVENTS),
        ]

        def dispose() -> None:
            for undo in unsubscribe:
                undo()

        return dispose

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The judges' task group; the runtime starts it with ``tg.start`` and cancels it when it stops."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            queued, self._queued = self._queued, []
            for channel in queued:
                tg.start_soon(self._judge_channel, channel)
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._tg = None

    async def settled(self) -> None:
        """Return once no judge is running or queued and its records are written (wrap it in a deadline)."""
        await self._settled.wait()

    def _begin(self) -> None:
        self._work += 1
        if self._settled.is_set():
            self._settled = anyio.Event()

    def _end(self) -> None:
        self._work -= 1
        if self._work == 0:
            self._settled.set()

    async def reconsider(self, entries: Sequence[Entry]) -> None:
        """Decide again for messages a crashed turn left unanswered (judges per channel coalesce)."""
        for entry in entries:
            await self.decide(entry)

    async def decide(self, entry: Entry) -> JevDecision | None:
        """Rules and cooldown for an inbound message; ``None`` when not inbound or the judge was asked."""
        source, features = wake_source(entry), message_features(entry)
        if source is None or features is None:
            return None
        channel = source_channel(source)
        now = self.ctx.clock.now()
        decision = decide_before_judge(
            features, last_sent_at=self.last_sent.get(channel), now=now, options=self.options
        )
        if decision is None:
            self._ask_judge(channel, entry)
            return None
        logger.debug("%s: entry %s in %s: %s", self.ctx.key, entry.id, channel, decision.reason)
        if decision.trigger:
            if (running := self._judging.get(channel)) is not None:
                running.answered = True
            await self._start(entry, channel, decision)
        return decision

    def _ask_judge(self, channel: str, entry: Entry) -> None:
        running = self._judging.get(channel)
        if running is not None:
            running.entry, running.again = entry, True
            return
        self._judging[channel] = _Judging(entry)
        self._begin()
        if self._tg is not None:
            self._tg.start_soon(self._judge_channel, channel)
            return
        self._queued.append(channel)
        if not self._warned:
            self._warned = True
            logger.warning("%s: the jev engine's task is not running yet; judges wait for it", self.ctx.key)

    async def _judge_channel(self, channel: str) -> None:
        judging = self._judging[channel]
        try:
            while True:
                judging.again = False
                entry = judging.entry
                decision = await self.judge(entry, channel)
                if judging.answered:
                    return
                if decision.trigger:
                    await self._start(entry, channel, decision)
                    return
                if not judging.again or self._cooling(channel):
                    return
        finally:
            del self._judging[channel]
            self._end()

    async def judge(self, entry: Entry, channel: str) -> JevDecision:
        """Ask the judge about the channel's latest messages now; records and returns its decision."""
        options, clock, model = self.options, self.ctx.clock, self.judge_model
        select = partial(
            chat_history,
            channel=channel,
            limit=options.history_messages,
            cross=self.ctx.sid is None or self.ctx.profile.mode == "cross",
            plain_replies=self.ctx.profile.reply_with_text,
        )
        history = await self.ctx.log.read_back(select)
        request = build_judge_request(history, options, bot_name=self.ctx.profile.id)
        started = clock.monotonic()
        result: ModelResult | None = None
        try:
            result = await run_with_deadline(clock, options.timeout_ms / 1000.0, partial(model.generate, request))
        except TimeoutError:
            decision = judge_failed(f"no answer within {options.timeout_ms} ms")
        except Exception as exc:
            decision = judge_failed(f"{type(exc).__name__}: {exc}")
        else:
            decision = decide_after_judge(result.text, options)
        elapsed = round((clock.monotonic() - started) * 1000.0)
        await self._record_judge(entry, channel, decision, model.name if result is None else result.model, elapsed)
        if result is not None:
            usage = {"purpose": RECORD_KIND, "model": result.model or model.name, **result.usage.to_dict()}
            await self._record("usage", usage)
        return decision

    async def _record_judge(
        self, entry: Entry, channel: str, decision: JevDecision, model: str | None, elapsed: int
    ) -> None:
        scores = decision.scores
        record: dict[str, Any] = {
            "kind": RECORD_KIND,
            "entry": entry.id,
            "channel": channel,
            "trigger": decision.trigger,
            "reason": decision.reason,
            "score": None if decision.score is None else round(decision.score, 4),
            "scores": None if scores is None else asdict(scores),
            "model": model or self.judge_model.name,
            "ms": elapsed,
        }
        if decision.detail:
            record["detail"] = decision.detail
            logger.warning("%s: the judge failed on entry %s (%s): wait", self.ctx.key, entry.id, decision.detail)
        else:
            logger.info(
                "%s: judge on entry %s: score %s, trigger %s", self.ctx.key, entry.id, record["score"], decision.trigger
            )
        await self._record("custom", record)

    async def _record(self, entry_type: str, data: dict[str, Any]) -> None:
        """Append now when no turn runs, else after it (a turn's messages stay one run of lines)."""
        if not self._records:
            self._begin()
        self._records.append((entry_type, data))
        if not self.ctx.agent.busy:
            await self._flush_records()

    async def _flush_records(self) -> None:
        records, self._records = self._records, []
        if not records:
            return
        try:
            for entry_type, data in records:
                await self.ctx.log.append(entry_type, data)
        finally:
            self._end()

    def _cooling(self, channel: str) -> bool:
        last = self.last_sent.get(channel)
        return last is not None and (self.ctx.clock.now() - last) * 1000.0 < self.options.cooldown_ms

    async def _start(self, entry: Entry, channel: str, decision: JevDecision) -> None:
        info: dict[str, Any] = {"entry": entry.id, "channel": channel, "rule": decision.reason}
        if decision.score is not None:
            info["score"] = round(decision.score, 4)
        try:
            await self.ctx.agent.continue_(None, reason=REASON, info=info)
        except AgentStopped:
            logger.debug("%s: entry %s not answered: the agent is stopping", self.ctx.key, entry.id)

    async def _on_appended(self, event: BusEvent) -> None:
        if not event.data.get("joined"):  # a joined entry is the running turn's; unseen ones come back below
            await self.decide(event["entry"])

    async def _on_turn_end(self, event: BusEvent) -> None:
        if self._records and not self.ctx.agent.busy:
            await self._flush_records()
        for entry in getattr(event.data.get("outcome"), "unseen", ()):
            await self.decide(entry)

    async def _on_sent(self, event: BusEvent) -> None:
        sid, channel_id = event.data.get("sid") or self.ctx.sid, event.data.get("channel_id") or self.ctx.channel_id
        self.last_sent[channel_key(sid, channel_id)] = self.ctx.clock.now()
