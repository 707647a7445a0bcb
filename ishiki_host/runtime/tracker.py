"""The runtime's view of its turns: which inbound messages are new to the next turn, the running turn's
trust and what it sent, where the conversation last spoke, and the bus handlers that keep them.

In the bus's ``track`` phase (before engines and extensions react): ``message.appended`` adds inbound entries
to the pending ones, notes their channel (``last_target``) and counts them for the waiter; ``turn.start``
opens a ``TurnState`` with the pending entries (the turn's trust is the lowest of their senders', or the
runtime's home level without any, lowered to the ceilings of its triggers: see ``runtime.scheduled``), marks it
as the turn whose work runs, and clears the waiter; ``message.sent`` collects the ids a turn sent. In the
``close`` phase (after every reaction) the turn's end is handled: ``finished`` gets a ``TurnReport`` (with
how long the turn ran by ``clock`` and the tools it called; the runtime hands it to the host's turn listeners
and, in the background, to the extensions), ``closing`` gets it too and is awaited (the apology for
a failed turn, ``runtime.apology``), the messages the turn never saw go to ``reconsider`` (the wakeup engine),
and the end is marked handled (what ``settled()`` waits for), also when one of those raised or was cut short.
A turn that failed because its fact log could not be written stops the runtime (``Lifecycle.log_failed``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from ishiki_host.channels.inbound import is_inbound, source_target
from ishiki_host.errors import FactLogError
from ishiki_host.plugins.runtime_api import TurnReport
from ishiki_host.runtime.scheduled import capped, ceiling_of, enter, leave
from ishiki_host.runtime.trust import TrustPolicy, lowest
from ishiki_host.runtime.turnstate import TurnState

if TYPE_CHECKING:
    import logging

    from ishiki_host.addresses.ids import Target
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.core.bus import BusEvent, EventBus
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.core.turns import Turn, TurnOutcome
    from ishiki_host.runtime.lifecycle import Lifecycle
    from ishiki_host.runtime.waiter import Waiter

__all__ = ["PENDING_LIMIT", "Reconsider", "TurnTracker", "event_sender"]

PENDING_LIMIT = 500  # inbound entries kept for a turn's trust; older ones only leave their level behind
_TURN_ENDS = ("turn.done", "turn.failed", "turn.aborted")

Reconsider = Callable[[Sequence["Entry"]], Awaitable[None]]
"""Decide again on inbound entries a turn never saw (the wakeup engine's ``reconsider``)."""


def event_sender(event: IshikiEvent) -> str | None:
    """``platform:userId`` of an event's sender (``None`` when the event names none)."""
    return f"{event.platform}:{event.user.id}" if event.user is not None and event.user.id else None


class TurnTracker:
    """See the module docstring."""

    def __init__(
        self,
        policy: TrustPolicy,
        sid: str | None,
        waiter: Waiter,
        activity: Lifecycle,
        logger: logging.Logger,
        *,
        finished: Callable[[TurnReport, tuple[str, ...] | None], None],
        closing: Callable[[TurnReport], Awaitable[None] | None] | None = None,
        clock: Clock | None = None,
    ):
        self.policy = policy
        self._clock = clock
        self._run: Turn | None = None
        self._home = TrustPolicy.home_level(sid)
        self._waiter = waiter
        self._activity = activity
        self._logger = logger
        self._finished = finished
        self._closing = closing
        self._reconsider: Reconsider | None = None
        self.turn = TurnState(trust=self._home)
        self.last_target: Target | None = None
        self._pending: list[Entry] = []
        self._owed: list[Entry] = []  # the inbound messages of failed turns since the last one that ended done
        self._floor: TrustLevel | None = None

    def sender_level(self, event: IshikiEvent) -> TrustLevel:
        """The trust level of an event's sender (written on its entry at ingest)."""
        return self.policy.level(event_sender(event))

    def admit_joined(self) -> None:
        """Move the pending inbound entries into the running turn; they may lower its trust."""
        if not self._pending:
            return
        entries, self._pending = self._pending, []
        levels = [self.policy.of_entry(e) for e in entries]
        if self._floor is not None:
            levels.append(self._floor)
            self._floor = None
        self.turn.inbound.extend(entries)
        self.turn.trust = lowest([self.turn.trust, *levels], self.turn.trust)

    def seed_pending(self, entries: Sequence[Entry]) -> None:
        """Inbound entries no finished turn answered that were not delivered since this start: those a crash
        left behind, and the copies a compaction carried (they replace their originals, now behind the
        session boundary). They count for the next turn's trust."""
        replaced = {e.data.get("carried") for e in entries}
        self._pending = [e for e in self._pending if e.id not in replaced]
        self._owed = [e for e in self._owed if e.id not in replaced]
        known = {e.id for e in self._pending}
        for entry in sorted(entries, key=lambda e: e.id):
            if entry.id not in known and is_inbound(entry):
                known.add(entry.id)
                self._pending.append(entry)

    def unanswered(self) -> list[int]:
        """The ids of the inbound messages no turn answered yet, which a compaction must carry, not fold: those
        new to the next turn, those of the running turn, those of turns that failed since one ended done."""
        entries = [*self._owed, *self.turn.inbound, *self._pending]
        return sorted({e.id for e in entries})

    def subscribe(self, bus: EventBus, reconsider: Reconsider | None) -> None:
        """Keep the turns' state from ``bus`` (``track`` and ``close`` phases); ``reconsider`` gets what a
        turn never saw."""
        self._reconsider = reconsider
        bus.subscribe("message.appended", self._on_appended, phase="track")
        bus.subscribe("turn.start", self._on_turn_start, phase="track")
        bus.subscribe("message.sent", self._on_sent, phase="track")
        for name in _TURN_ENDS:
            bus.subscribe(name, self._on_turn_end, phase="close")

    def _on_appended(self, event: BusEvent) -> Awaitable[None] | None:
        entry: Entry = event["entry"]
        if not is_inbound(entry):
            return None
        self._pending.append(entry)
        if len(self._pending) > PENDING_LIMIT:
            dropped = self._pending.pop(0)
            floor = [self._floor] if self._floor is not None else []
            self._floor = lowest([self.policy.of_entry(dropped), *floor], "owner")
        self.last_target = source_target(entry) or self.last_target
        # Sync unless a wait is armed: the bus awaits (and times) only handlers that return an awaitable.
        return self._waiter.note_message() if self._waiter.armed else None

    def _on_turn_start(self, event: BusEvent) -> None:
        turn: Turn = event["turn"]
        # A turn with new messages runs at the lowest level among their senders, whatever the home level; a
        # turn another turn scheduled, at most at that turn's level (the ceilings of its triggers).
        base = "owner" if self._pending else self._home
        started = self._clock.monotonic() if self._clock is not None else None
        trust = capped(base, ceiling_of(turn.triggers))
        self.turn = TurnState(trust=trust, number=turn.number, started_at=started)
        self._run = turn  # for the tools it called; dropped at its end (see ``TurnState``)
        self.admit_joined()
        enter(self.turn)
        self._waiter.clear()
        self._activity.turn_started(turn, self.turn.latest_target())

    def _on_sent(self, event: BusEvent) -> None:
        self.turn.sent.extend(event["ids"])

    def _on_turn_end(self, event: BusEvent) -> Awaitable[None] | None:
        outcome: TurnOutcome = event["outcome"]
        state, self.turn = self.turn, TurnState(trust=self._home)
        if outcome.status == "done":
            self._owed = []
        else:
            self._owed = [*self._owed, *state.inbound][-PENDING_LIMIT:]
        report = TurnReport(
            outcome.turn,
            outcome.status,
            outcome.reason,
            outcome.error,
            tuple(state.inbound),
            tuple(state.sent),
            outcome,
            state.trust,
            self._seconds(state),
            self._tools_called(),
        )
        self._run = None
        if isinstance(outcome.error, FactLogError):
            self._activity.log_failed(outcome.error)
        self._finished(report, state.extensions)  # its background work still acts on behalf of this turn
        leave()
        closing = self._closing(report) if self._closing is not None else None
        unseen = outcome.unseen if self._reconsider is not None else ()
        if closing is None and not unseen:
            self._activity.turn_ended()
            return None
        return self._close(closing, unseen)

    def _tools_called(self) -> tuple[str, ...]:
        """The names of the tool calls of the turn that ends, in order."""
        run = self._run
        return () if run is None else tuple(record.call.name for step in run.steps for record in step.calls)

    def _seconds(self, state: TurnState) -> float:
        if self._clock is None or state.started_at is None:
            return 0.0
        return max(0.0, self._clock.monotonic() - state.started_at)

    async def _close(self, closing: Awaitable[None] | None, unseen: Sequence[Entry]) -> None:
        try:
            if closing is not None:
                await _logged(closing, self._logger, "handling the end of a turn failed")
            if unseen and self._reconsider is not None:
                message = f"the wakeup engine failed to reconsider {len(unseen)} message(s)"
                await _logged(self._reconsider(list(unseen)), self._logger, message)
        finally:  # a handler the bus cut short must not leave settled() waiting forever
            self._activity.turn_ended()


async def _logged(work: Awaitable[None], logger: logging.Logger, message: str) -> None:
    try:
        await work
    except Exception:
        logger.exception(message)
