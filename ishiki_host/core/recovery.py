"""Repair of a fact log after a crash, run by the agent before its first turn.

The host may die anywhere. What it leaves is always a prefix of a well-formed log (the torn last line is
set aside when the log opens), so two things can be missing, both at the end: results of tool calls the
model made, and the end of the turn that was running. Recovery appends them, so every tool call in the log
is followed by its result and every turn ends, and reports the inbound messages that turn left unanswered:
those appended since the last turn that ended normally, and those its ``turn.start`` names as triggers (a
message that came while the previous turn was ending, unseen by it, is older than that turn's end).
A turn the host aborted while stopping (``turn.aborted`` marked ``resume``) is reported the same way.
Reading is O(entries since the last turn that ended normally, or since the oldest trigger).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.turns import Recovery

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol

__all__ = ["INTERRUPTED", "TURN_END_EVENTS", "recover"]

logger = logging.getLogger(__name__)

TURN_END_EVENTS = frozenset({"turn.done", "turn.failed", "turn.aborted"})
INTERRUPTED = "interrupted: the host stopped before this tool finished"
_KEEP_AT_MOST = 10_000  # entries kept from the region; older ones are only scanned for the turn number


@dataclass
class _Scan:
    region: list[Entry] = field(default_factory=list)
    last_turn: int = 0
    triggers: list[Entry] = field(default_factory=list)  # older than the region, named by its turns' triggers


def _scan(newest_first: Iterator[Entry]) -> _Scan:
    """Entries since the last turn that ended other than by a crash (newest ``_KEEP_AT_MOST`` of them), and
    the older entries the region's turns were started for."""
    scan = _Scan()
    wanted: set[int] = set()
    for entry in newest_first:
        if entry.turn is not None:
            scan.last_turn = max(scan.last_turn, entry.turn)
        if _ends_turn_normally(entry):
            scan.triggers = _find(newest_first, wanted - {e.id for e in scan.region})
            break
        wanted.update(_trigger_entries(entry))
        if len(scan.region) < _KEEP_AT_MOST:
            scan.region.append(entry)
        elif scan.last_turn:
            break
    scan.region.reverse()
    return scan


def _trigger_entries(entry: Entry) -> list[int]:
    """The entry ids a ``turn.start`` names as what started the turn."""
    if entry.type != "event" or entry.name != "turn.start":
        return []
    triggers = entry.data.get("triggers") or ()
    ids = (t.get("entry") for t in triggers if isinstance(t, dict))
    return [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]


def _find(newest_first: Iterator[Entry], ids: set[int]) -> list[Entry]:
    """The entries with ``ids`` among the rest of ``newest_first``, oldest first (stops below the smallest)."""
    found: list[Entry] = []
    if not ids:
        return found
    lowest = min(ids)
    for entry in newest_first:
        if entry.id in ids:
            found.append(entry)
        if entry.id <= lowest:
            break
    found.reverse()
    return found


def _ends_turn_normally(entry: Entry) -> bool:
    """A turn end after which nothing is left to re-decide (not a crash, not a stopping host)."""
    if entry.type != "event" or entry.name not in TURN_END_EVENTS:
        return False
    return entry.data.get("reason") != "crash" and not entry.data.get("resume")


async def recover(log: FactLogProtocol) -> Recovery:
    """Close what a crash left open in ``log`` and say what was repaired."""
    scan = await log.read_back(_scan)
    open_turn = _open_turn(scan.region)
    orphans = _orphan_calls(scan.region)
    repaired: list[Entry] = []
    for call, turn in orphans:
        content = Message.tool(call, INTERRUPTED, is_error=True).to_dict()
        repaired.append(await log.append("message", content, turn=turn))
    if open_turn is not None:
        repaired.append(await log.append("event", {"name": "turn.aborted", "reason": "crash"}, turn=open_turn))
    await log.sync()
    if repaired:
        logger.warning(
            "fact log %s: repaired after a crash: turn %s aborted, %d tool call(s) answered as interrupted",
            log.where,
            open_turn,
            len(orphans),
        )
    interrupted = open_turn if open_turn is not None else _stopped_turn(scan.region)
    if interrupted is None:
        return Recovery(repaired=tuple(repaired), last_turn=scan.last_turn)
    return Recovery(
        aborted_turn=interrupted,
        crashed=open_turn is not None,
        repaired=tuple(repaired),
        unanswered=tuple(e for e in [*scan.triggers, *scan.region] if _is_inbound(e)),
        last_turn=scan.last_turn,
    )


def _open_turn(region: list[Entry]) -> int | None:
    ended = {e.turn for e in region if e.type == "event" and e.name in TURN_END_EVENTS}
    starts = [e.turn for e in region if e.type == "event" and e.name == "turn.start" and e.turn is not None]
    return starts[-1] if starts and starts[-1] not in ended else None


def _stopped_turn(region: list[Entry]) -> int | None:
    """The last turn of the region if the host stopped it (``turn.aborted`` marked ``resume``)."""
    ends = [e for e in region if e.type == "event" and e.name in TURN_END_EVENTS]
    return ends[-1].turn if ends and ends[-1].data.get("resume") else None


def _orphan_calls(region: list[Entry]) -> list[tuple[ToolCall, int | None]]:
    calls: dict[str, tuple[ToolCall, int | None]] = {}
    answered: set[Any] = set()
    for entry in region:
        if entry.type != "message":
            continue
        if entry.data.get("role") == "tool":
            answered.add(entry.data.get("tool_call_id"))
            continue
        for raw in entry.data.get("tool_calls") or ():
            try:
                call = ToolCall.from_dict(raw)
            except (KeyError, TypeError):
                continue
            calls.setdefault(call.id, (call, entry.turn))
    return [pair for call_id, pair in calls.items() if call_id not in answered]


def _is_inbound(entry: Entry) -> bool:
    return entry.type == "message" and entry.data.get("role") == "user" and not entry.data.get("wake")
