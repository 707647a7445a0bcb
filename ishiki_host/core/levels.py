"""The trust level of what a fact-log entry holds, so a window or a summary never shows it to a lower turn.

Every piece of content is stamped with a level when it is written: an inbound message with its sender's
(``data.trust``, at ingest), the model's messages and the tool results of a turn with that turn's level (the
agent writes ``data.trust`` from ``TurnSetup.trust``, which follows the turn as joined messages lower it), a
summary with the highest level of what it covers (``data.min_trust`` of ``session`` and ``compact`` entries:
only turns at that level or above may read it). ``summary_readers`` is that highest level for a run of entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from ishiki_host.core.tools import TRUST_ORDER

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tools import TrustLevel

__all__ = ["CONTENT_TRUST", "SUMMARY_TRUST", "content_level", "summary_readers"]

CONTENT_TRUST = "trust"
"""The key of a message entry's level: the sender's (inbound) or the producing turn's (the model's, tools')."""
SUMMARY_TRUST = "min_trust"
"""The key of a summary's level (``session`` and ``compact`` entries): the lowest level that may read it."""


def _level(value: object) -> TrustLevel | None:
    return cast("TrustLevel", value) if isinstance(value, str) and value in TRUST_ORDER else None


def content_level(entry: Entry) -> TrustLevel | None:
    """The level ``entry``'s content belongs to; ``None`` when it records none (written before levels were
    stamped, or no content: events, records, the host's wake prompts)."""
    if entry.type == "message":
        return None if entry.data.get("wake") else _level(entry.data.get(CONTENT_TRUST))
    if entry.type in ("session", "compact"):
        return _level(entry.data.get(SUMMARY_TRUST))
    return None


def summary_readers(
    entries: Iterable[Entry], level_of: Callable[[Entry], TrustLevel | None] = content_level
) -> TrustLevel:
    """Who may read a summary of ``entries``: the highest level among their contents (``level_of`` each).
    Content whose level is unknown counts as ``owner`` (nobody knows who could read it); so does nothing."""
    levels: list[TrustLevel] = []
    for entry in entries:
        if entry.type not in ("message", "session", "compact") or entry.data.get("wake"):
            continue
        if entry.type != "message" and not entry.data.get("summary"):
            continue  # a clear: nothing carried
        levels.append(level_of(entry) or "owner")
    return max(levels, key=TRUST_ORDER.__getitem__) if levels else "owner"
