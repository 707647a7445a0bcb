"""The ``willingness`` wakeup engine: a per-channel score that rises with messages, and a seeded die.

The instance subscribes to the runtime's bus and keeps a ``WillingnessModel`` (see ``willingness_model`` for the
algorithm). For every inbound platform message (``_inbound``) appended outside a turn it adds the message to
its channel's score and rolls (``decide``); a hit starts a turn, ``agent.continue_(None,
reason="wakeup.willingness", info={"entry", "channel", "score", "probability"})``. A message that joined a
running turn only warms its channel (``observe``): the turn sees it. If the turn ended without seeing it (it is
in ``TurnOutcome.unseen``), the channel is rolled for once on its current score, as is every channel of the
messages ``reconsider`` gets after a crash (messages not yet scored are scored first, never twice).
``message.sent`` charges ``reply_cost`` to the channel it names, and only to it. An edit of a message
(``source.extra.editedAt``) is neither scored nor rolled for; a message in a group that needs no mention
(``source.extra.mentionRequired: false``) gains ``at_mention`` as if it mentioned the bot (see ``_inbound``).

Times come from the runtime's clock (``ctx.clock.now()``); the die is ``random.Random(seed)`` when the option
``seed`` is set, else the runtime's ``ctx.rng``. So a replay of the same messages on a ``FakeClock`` with the
same seed makes the same decisions.

Scores survive a restart in ``<runtime home>/wakeup-willingness.json`` (``STATE_FILE``): the model's
``to_dict()`` plus ``lastEntry``, the id of the newest message already in the scores. It is replaced after
every change (a temporary file renamed over it, so a reader never sees half a file), coalesced while a write is
in flight, and read back when the engine is created. It is not fsynced: the scores are soft state, and a power
loss costs at most the last changes. A state file that cannot be read is set aside as ``.corrupt`` with a
warning and the scores start from zero. Channels whose score decayed to nothing are pruned when it is written.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from ishiki_host.config.jsonio import load_json
from ishiki_host.engines.wakeup._inbound import channel_key, message_features, source_channel, wake_source
from ishiki_host.engines.wakeup.willingness_model import (
    WILLINGNESS_CONFIG_SCHEMA,
    Decision,
    WillingnessModel,
    WillingnessOptions,
)
from ishiki_host.errors import AgentStopped, ConfigError, EngineStateInvalid
from ishiki_host.plugins.base import WakeupEngine

if TYPE_CHECKING:
    from pathlib import Path

    from ishiki_host.core.bus import BusEvent
    from ishiki_host.core.entries import Entry
    from ishiki_host.engines.wakeup._features import RandomSource
    from ishiki_host.plugins.runtime_api import Dispose, RuntimeContext

__all__ = ["STATE_FILE", "WillingnessWakeup", "WillingnessWakeupEngine", "load_state", "replace_file"]

logger = logging.getLogger(__name__)

REASON = "wakeup.willingness"
STATE_FILE = "wakeup-willingness.json"
_END_EVENTS = ("turn.done", "turn.failed", "turn.aborted")


class WillingnessWakeupEngine(WakeupEngine):
    """Answers a channel with a probability that grows with a score its messages raise and time lowers."""

    config_schema: ClassVar[Mapping[str, Any]] = WILLINGNESS_CONFIG_SCHEMA

    def create(self, ctx: Any, config: Mapping[str, Any]) -> WillingnessWakeup:
        """Make the engine instance for one runtime, with the scores it saved last time."""
        return WillingnessWakeup(ctx, WillingnessOptions.from_config(config))


class WillingnessWakeup:
    """One runtime's willingness engine (see the module docstring)."""

    def __init__(self, ctx: RuntimeContext, options: WillingnessOptions):
        self.ctx = ctx
        self.options = options
        self.path = ctx.home / STATE_FILE
        self.model, self.scored = load_state(self.path, options)
        self.rng: RandomSource = options.make_rng() if options.seed is not None else ctx.rng
        self._dirty = False
        self._saving = False

    def attach(self, ctx: RuntimeContext) -> Dispose:
        """Subscribe to messages, sends and turn ends; the returned disposer unsubscribes and saves."""
        self.ctx = ctx
        unsubscribe = [
            ctx.bus.subscribe("message.appended", self._on_appended),
            ctx.bus.subscribe("message.sent", self._on_sent),
            *(ctx.bus.subscribe(name, self._on_turn_end) for name in _END_EVENTS),
        ]

        async def dispose() -> None:
            for undo in unsubscribe:
                undo()
            if self._dirty:
                await self.save()

        return dispose

    async def reconsider(self, entries: Sequence[Entry]) -> None:
        """Score the messages a crashed turn left unanswered (those not yet scored), then roll once per channel."""
        await self._roll_channels(entries)

    async def decide(self, entry: Entry) -> Decision | None:
        """Score an inbound message and roll for its channel; starts a turn on a hit (``None``: not inbound)."""
        source = wake_source(entry)
        features = message_features(entry)
        if source is None or features is None:
            return None
        channel = source_channel(source)
        now = self.ctx.clock.now()
        if entry.id > self.scored:
            decision = self.model.decide(channel, features, now, self.rng)
            self.scored = entry.id
        else:
            decision = self.model.roll(channel, now, self.rng)
        # The turn is queued before the save yields, so whoever waits for the agent to be idle sees it.
        await self._start(entry, channel, decision)
        await self.save()
        return decision

    def observe(self, entry: Entry) -> float | None:
        """Add an inbound message to its channel's score without deciding; the new score (``None``: not inbound)."""
        source = wake_source(entry)
        features = message_features(entry)
        if source is None or features is None or entry.id <= self.scored:
            return None
        self.scored = entry.id
        return self.model.observe(source_channel(source), features, self.ctx.clock.now())

    def score(self, channel: str) -> float:
        """A channel's score now (``channel`` as ``channel_key`` builds it)."""
        return self.model.score(channel, self.ctx.clock.now())

    async def save(self) -> None:
        """Write the scores to the state file; a write already in flight takes this state along."""
        self._dirty = True
        if self._saving:
            return
        self._saving = True
        try:
            while self._dirty:
                self._dirty = False
                payload = self._snapshot()
                await anyio.to_thread.run_sync(replace_file, self.path, payload)
        except OSError as exc:
            logger.warning("%s: could not save willingness scores to %s: %s", self.ctx.key, self.path, exc)
        finally:
            self._saving = False

    def _snapshot(self) -> bytes:
        self.model.prune(self.ctx.clock.now())
        state = {**self.model.to_dict(), "lastEntry": self.scored}
        return json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode()

    async def _start(self, entry: Entry, channel: str, decision: Decision) -> None:
        logger.debug("%s: entry %s in %s: %s", self.ctx.key, entry.id, channel, decision)
        if not decision.trigger:
            return
        info = {
            "entry": entry.id,
            "channel": channel,
            "score": round(decision.score, 3),
            "probability": round(decision.probability, 4),
        }
        try:
            await self.ctx.agent.continue_(None, reason=REASON, info=info)
        except AgentStopped:
            logger.debug("%s: entry %s not answered: the agent is stopping", self.ctx.key, entry.id)

    async def _roll_channels(self, entries: Sequence[Entry]) -> None:
        last: dict[str, Entry] = {}
        for entry in entries:
            source = wake_source(entry)
            if source is not None:
                self.observe(entry)
                channel = source_channel(source)
                last.pop(channel, None)
                last[channel] = entry  # channels in the order of their newest message
        for entry in last.values():
            await self.decide(entry)

    async def _on_appended(self, event: BusEvent) -> None:
        entry = event["entry"]
        if not event.data.get("joined"):
            await self.decide(entry)
        elif self.observe(entry) is not None:
            await self.save()

    async def _on_turn_end(self, event: BusEvent) -> None:
        await self._roll_channels(getattr(event.data.get("outcome"), "unseen", ()))

    async def _on_sent(self, event: BusEvent) -> None:
        sid, channel_id = event.data.get("sid") or self.ctx.sid, event.data.get("channel_id") or self.ctx.channel_id
        channel = channel_key(sid, channel_id)
        score = self.model.on_reply(channel, self.ctx.clock.now())
        logger.debug("%s: sent in %s; its score is now %.1f", self.ctx.key, channel, score)
        await self.save()


def load_state(path: Path, options: WillingnessOptions) -> tuple[WillingnessModel, int]:
    """The saved scores and ``lastEntry``; fresh ones when there is no file or it cannot be read (set aside)."""
    if not path.exists():
        return WillingnessModel(options), 0
    try:
        # The host's hardened loader: a mangled file nested 100,000 deep is one error, not a RecursionError.
        data = load_json(path, str(path), ConfigError).data
        if not isinstance(data, dict):
            raise EngineStateInvalid("willingness state: expected a JSON object")
        model = WillingnessModel.from_dict(data, options)
        scored = data.get("lastEntry", 0)
        if isinstance(scored, bool) or not isinstance(scored, int):
            raise EngineStateInvalid(f'willingness state: "lastEntry" must be an entry id, not {scored!r}')
    except FileNotFoundError:
        return WillingnessModel(options), 0
    except (ConfigError, ValueError, EngineStateInvalid) as exc:
        aside = path.with_name(path.name + ".corrupt")
        logger.warning("%s cannot be read (%s); the scores start from zero and it is kept as %s", path, exc, aside)
        with contextlib.suppress(OSError):
            path.replace(aside)
        return WillingnessModel(options), 0
    return model, scored


def replace_file(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` through a temporary file beside it (blocking: run it in a worker thread)."""
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)
