"""What the runtime knows about the turn being run: its trust level, the inbound messages new in it, what it
sent. Plugins read it through ``RuntimeContext.turn_state`` (a ``TurnView``: read-only)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ishiki_host.channels.inbound import source_target

if TYPE_CHECKING:
    from ishiki_host.addresses.ids import Target
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tools import TrustLevel

__all__ = ["TurnState"]


@dataclass(eq=False)
class TurnState:
    """One turn's trust and inbound messages (``number`` is ``None`` between turns).

    ``extensions``: the names of the extensions switched on for this turn (``/extensions``), ``None`` for all.
    ``started_at`` is the clock's monotonic time at its start, for the turn's report. (The agent's live ``Turn``
    is not kept here: a task started during the turn keeps this state in its context for as long as it lives,
    and must not keep the turn's steps, requests and results alive with it.)
    """

    trust: TrustLevel
    number: int | None = None
    inbound: list[Entry] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    extensions: tuple[str, ...] | None = None
    started_at: float | None = None

    def targets(self) -> set[Target]:
        """The channels the turn's inbound messages came from."""
        return {t for t in (source_target(e) for e in self.inbound) if t is not None}

    def latest_target(self) -> Target | None:
        """The channel of the newest inbound message of the turn."""
        for entry in reversed(self.inbound):
            target = source_target(entry)
            if target is not None:
                return target
        return None
