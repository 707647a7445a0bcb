"""What the runtime knows about the turn being run (its trust level, the inbound messages new in it, what it
sent), and ``TurnReport``, how a finished turn is shown to extensions (``ishiki_turn_finished``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ishiki_host.tools.kernel import Target

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.core.turns import TurnOutcome, TurnStatus

__all__ = ["TurnReport", "TurnState", "source_target"]


def source_target(entry: Entry) -> Target | None:
    """The channel an inbound entry came from (``sid`` + channel id), from its stored event."""
    source = entry.data.get("source")
    if not isinstance(source, Mapping):
        return None
    platform, self_id, channel = source.get("platform"), source.get("selfId"), source.get("channelId")
    if not (isinstance(platform, str) and isinstance(self_id, str) and isinstance(channel, str)):
        return None
    return Target(f"{platform}:{self_id}", channel)


@dataclass(eq=False)
class TurnState:
    """One turn's trust and inbound messages (``number`` is ``None`` between turns).

    ``extensions``: the names of the extensions switched on for this turn (``/extensions``), ``None`` for all.
    """

    trust: TrustLevel
    number: int | None = None
    inbound: list[Entry] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    extensions: tuple[str, ...] | None = None

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


@dataclass(frozen=True)
class TurnReport:
    """A finished turn: its end (``status``/``reason``/``error``), the inbound messages it answered and the
    platform ids of what it sent. ``outcome`` is the agent's own ``TurnOutcome``; ``trust`` the level the turn
    ran at (what it produced is readable at that level and above)."""

    turn: int
    status: TurnStatus
    reason: str
    error: BaseException | None
    inbound: tuple[Entry, ...]
    sent_ids: tuple[str, ...]
    outcome: TurnOutcome
    trust: TrustLevel = "owner"
