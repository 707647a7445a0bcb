"""The runtime's view of its turns: which inbound messages are new to the next turn, the running turn's
trust and what it sent, and the bus handlers that keep them (subscribed around the wakeup engine's own).

Early handlers (before the wakeup engine attaches): ``message.appended`` adds inbound entries to the pending
ones and counts them for the waiter; ``turn.start`` opens a ``TurnState`` with the pending entries (the turn's
trust is the lowest of their senders', or the runtime's home level without any) and clears the waiter;
``message.sent`` collects the ids a turn sent. The late handler (after the wakeup engine's) closes the turn:
it hands a ``TurnReport`` to the extensions (in the background), passes the messages the turn never saw to
the wakeup engine's ``reconsider``, and marks the end handled (what ``settled()`` waits for). A turn that
failed because its fact log could not be written stops the runtime (``Lifecycle.log_failed``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING

from ishiki_host.channels.inbound import is_inbound, source_target
from ishiki_host.errors import FactLogError
from ishiki_host.plugins.runtime_api import TurnReport
from ishiki_host.runtime.trust import TrustPolicy, lowest
from ishiki_host.runtime.turnstate import TurnState

if TYPE_CHECKING:
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.core.bus import BusEvent, EventBus
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.core.turns import Turn, TurnOutcome
    from ishiki_host.runtime.runtime import AgentRuntime

__all__ = ["PENDING_LIMIT", "TurnTracker", "event_sender"]

PENDING_LIMIT = 500  # inbound entries kept for a turn's trust; older ones only leave their level behind
_TURN_ENDS = ("turn.done", "turn.failed", "turn.aborted")


def event_sender(event: IshikiEvent) -> str | None:
    """``platform:userId`` of an event's sender (``None`` when the event names none)."""
    return f"{event.platform}:{event.user.id}" if event.user is not None and event.user.id else None


class TurnTracker:
    """See the module docstring."""

    def __init__(self, runtime: AgentRuntime):
        self._rt = runtime
        self.policy = TrustPolicy(runtime.profile.trust)
        self._home = TrustPolicy.home_level(runtime.key.sid)
        self.turn = TurnState(trust=self._home)
        self._pending: list[Entry] = []
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
        """Inbound entries from before this start that no finished turn answered."""
        known = {e.id for e in self._pending}
        for entry in sorted(entries, key=lambda e: e.id):
            if entry.id not in known:
                known.add(entry.id)
                self._pending.append(entry)

    def subscribe_early(self, bus: EventBus) -> None:
        """The handlers that must see events before the wakeup engine does."""
        bus.subscribe("message.appended", self._on_appended)
        bus.subscribe("turn.start", self._on_turn_start)
        bus.subscribe("message.sent", self._on_sent)

    def subscribe_late(self, bus: EventBus) -> None:
        """The handler that must run after the wakeup engine's own."""
        for name in _TURN_ENDS:
            bus.subscribe(name, self._on_turn_end)

    def _on_appended(self, event: BusEvent) -> Awaitable[None] | None:
        entry: Entry = event["entry"]
        if not is_inbound(entry):
            return None
        self._pending.append(entry)
        if len(self._pending) > PENDING_LIMIT:
            dropped = self._pending.pop(0)
            floor = [self._floor] if self._floor is not None else []
            self._floor = lowest([self.policy.of_entry(dropped), *floor], "owner")
        self._rt.lifecycle.last_target = source_target(entry) or self._rt.lifecycle.last_target
        # Sync unless a wait is armed: the bus awaits (and times) only handlers that return an awaitable.
        return self._rt.waiter.note_message() if self._rt.waiter.armed else None

    def _on_turn_start(self, event: BusEvent) -> None:
        turn: Turn = event["turn"]
        # A turn with new messages runs at the lowest level among their senders, whatever the home level.
        self.turn = TurnState(trust="owner" if self._pending else self._home, number=turn.number)
        self.admit_joined()
        self._rt.waiter.clear()
        self._rt.lifecycle.turn_started(turn, self.turn.latest_target())

    def _on_sent(self, event: BusEvent) -> None:
        self.turn.sent.extend(event["ids"])

    def _on_turn_end(self, event: BusEvent) -> Awaitable[None] | None:
        outcome: TurnOutcome = event["outcome"]
        state, self.turn = self.turn, TurnState(trust=self._home)
        report = TurnReport(
            outcome.turn,
            outcome.status,
            outcome.reason,
            outcome.error,
            tuple(state.inbound),
            tuple(state.sent),
            outcome,
            state.trust,
        )
        rt = self._rt
        if isinstance(outcome.error, FactLogError):
            rt.lifecycle.log_failed(outcome.error)
        if rt.extensions.implements("ishiki_turn_finished"):
            rt.lifecycle.background(rt.extensions.turn_finished(report, only=state.extensions))
        if outcome.unseen and rt.wakeup_engine is not None:
            return self._reconsider(outcome.unseen)
        rt.lifecycle.turn_ended()
        return None

    async def _reconsider(self, unseen: Sequence[Entry]) -> None:
        rt = self._rt
        try:
            await rt.wakeup_engine.reconsider(list(unseen))
        except Exception:
            rt.logger.exception("the wakeup engine failed to reconsider %d message(s)", len(unseen))
        rt.lifecycle.turn_ended()
