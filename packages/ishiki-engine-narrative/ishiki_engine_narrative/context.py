"""The ``narrative`` context engine: a resumable story state, and a small window of what came after it.

After each turn one background call (``ctx.spawn``, priority ``background``: the next turn never waits for
it) folds the turn into the story and appends a ``narrative`` entry (facts are never edited). Each step's
window holds only the entries after the newest narrative's ``upto`` (plus ``recent_messages`` covered ones
verbatim), at most ``max_messages`` messages: when more piled up (a busy group where most messages start no
turn), the older ones are folded first, in a catch-up update, down to half.
On a restart or after eviction, nothing needs restoring: the newest ``narrative`` entry is read back (an
update cut short by the stop is simply done by the next one).

Every update folds the entries right after its base story's ``upto``, so each ``narrative`` entry stands for
exactly the entries up to its own ``upto``, whichever update finished last: the updates after turns run one
at a time (each starting from the newest story), and a catch-up never waits for them.
``instructions()`` give the model the current story, tagged ``<narrative entry="N">``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
from ishiki_host import AgentHooks, ContextEngine

from ishiki_engine_narrative.config import CONTEXT_SCHEMA, resolve_options, role_settings
from ishiki_engine_narrative.story import Narrative
from ishiki_engine_narrative.transcript import story_block
from ishiki_engine_narrative.updater import NarrativeUpdater
from ishiki_engine_narrative.window import Scan, is_message, latest_narrative, project_window, scan_window

if TYPE_CHECKING:
    from ishiki_host import Entry, FactLogProtocol, Message, Priority, RuntimeContext, Step, TurnOutcome

__all__ = ["NarrativeContext", "NarrativeContextEngine"]

logger = logging.getLogger(__name__)

_FOLD_FACTOR = 4  # a catch-up folds at most this many windows' worth of messages


class NarrativeContext(AgentHooks):
    """One runtime's narrative context engine: the agent hooks owning the window and the projection."""

    def __init__(self, ctx: RuntimeContext, updater: NarrativeUpdater, *, max_messages: int, recent: int):
        self._ctx = ctx
        self._updater = updater
        self._max = max_messages
        self._recent = recent
        self._catch_up_turn: int | None = None
        self._folding = anyio.Lock()

    def hooks(self) -> AgentHooks:
        """The agent hooks: the instance itself."""
        return self

    async def instructions(self) -> str | None:
        """The current story, tagged with its entry id; ``None`` before the first update."""
        entry = await self._ctx.log.read_back(latest_narrative)
        if entry is None:
            return None
        return story_block(Narrative.from_entry(entry), entry.id)

    async def select_entries(self, log: FactLogProtocol, step: Step) -> list[Entry]:
        """The window: what came after the narrative, capped (folding the overflow first, once per turn)."""
        scan = await self._scan(log)
        if scan.messages_after > self._max and self._catch_up_turn != step.turn.number:
            self._catch_up_turn = step.turn.number
            scan = await self._catch_up(log, scan, step.turn.priority)
        return _capped(scan, self._max).window

    async def project(self, entries: list[Entry], step: Step) -> list[Message]:
        """Messages with who wrote them; records and story entries are not model input."""
        return project_window(entries)

    async def on_turn_finish(self, outcome: TurnOutcome) -> None:
        """Start the update that folds the finished turn into the story, off the path of turns.

        Only turns that ended on their own are folded: what a failed or aborted turn left unanswered stays in
        the window as new events, for the turn that answers it (the next update folds it then). A runtime
        context without ``spawn`` gets the update inline.
        """
        if outcome.status != "done":
            return
        spawn = getattr(self._ctx, "spawn", None)
        if spawn is None:
            await self._after_turn(outcome)
        else:
            spawn(partial(self._after_turn, outcome), name=f"narrative update after turn {outcome.turn}")

    async def _after_turn(self, outcome: TurnOutcome) -> None:
        log = self._ctx.log
        async with self._folding:
            scan = await self._scan(log)
            part = _turn_part(scan.after, outcome)
            if any(is_message(entry) for entry in part):
                await self._updater.fold(
                    log, scan.narrative, part, reason="turn", priority="background", after_turn=outcome.turn
                )

    async def _scan(self, log: FactLogProtocol) -> Scan:
        return await log.read_back(partial(scan_window, recent=self._recent, limit=self._max * _FOLD_FACTOR))

    async def _catch_up(self, log: FactLogProtocol, scan: Scan, priority: Priority) -> Scan:
        # Not behind the lock: a background update may wait a long while for the gateway to let it go, and
        # the turn must not wait for it (both results are valid stories; the newer entry wins).
        part = _older_part(scan.after, keep=self._max // 2)
        folded = await self._updater.fold(
            log, scan.narrative, part, reason="catchup", priority=priority, skipped=scan.skipped
        )
        return await self._scan(log) if folded is not None else scan


def _turn_part(after: Sequence[Entry], outcome: TurnOutcome) -> list[Entry]:
    """The entries up to the end of ``outcome``'s turn, without those the turn never saw."""
    end = max((i for i, entry in enumerate(after) if entry.turn == outcome.turn), default=-1)
    part = list(after[: end + 1])
    unseen = {entry.id for entry in outcome.unseen}
    cut = next((i for i, entry in enumerate(part) if entry.id in unseen), len(part))
    return part[:cut]


def _older_part(after: Sequence[Entry], *, keep: int) -> list[Entry]:
    """The entries before the newest ``keep`` messages; tool results stay with the call they answer."""
    positions = [i for i, entry in enumerate(after) if is_message(entry)]
    if len(positions) <= keep:
        return []
    split = positions[len(positions) - keep] if keep else len(after)
    while split < len(after) and after[split].data.get("role") == "tool":
        split += 1
    return list(after[:split])


def _capped(scan: Scan, limit: int) -> Scan:
    """``scan`` with at most the newest ``limit`` messages after the narrative."""
    if scan.messages_after <= limit:
        return scan
    older = _older_part(scan.after, keep=limit)
    dropped = sum(1 for entry in older if is_message(entry))
    return Scan(scan.narrative, scan.after[len(older) :], scan.recent, scan.opening, scan.skipped + dropped)


class NarrativeContextEngine(ContextEngine):
    """Keeps a resumable narrative of the runtime (who is present, what is going on, open threads, the persona's
    intent), updated after each turn by a background call; the window holds only what came after it.

    Used together with the ``narrative`` toolcall engine.
    """

    config_schema: ClassVar[Mapping[str, Any]] = CONTEXT_SCHEMA
    requires: ClassVar[tuple[str, ...]] = ("ishiki.engine.toolcall.narrative",)

    def create(self, ctx: Any, config: Mapping[str, Any]) -> NarrativeContext:
        """Make the engine instance for one runtime (``ConfigError`` for an unknown model or prompt file)."""
        options = resolve_options(CONTEXT_SCHEMA, config, "context.narrative")
        settings = role_settings(ctx, options["update"], "update", "context.narrative.update")
        updater = NarrativeUpdater(settings, ctx.model, ctx.profile.persona)
        return NarrativeContext(ctx, updater, max_messages=options["max_messages"], recent=options["recent_messages"])
