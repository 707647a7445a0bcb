"""What the newest entries of a runtime's fact log say when it starts: input it has not decided on.

A runtime that stops cleanly appends ``{"name": "runtime.stop", "reason"}`` (``STOP_EVENT``) as its last entry.
Inbound messages appended after the last turn ended **and** after the last clean stop were never decided on
(the host died between making them durable and the wakeup engine's decision): the runtime passes them to its
wakeup engine's ``reconsider`` at start, like the messages a crashed turn left unanswered
(``ishiki_host.host.resume`` finds the runtimes that need this without waiting for their next input).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ishiki_host.channels.inbound import is_inbound, source_target
from ishiki_host.core.recovery import TURN_END_EVENTS

if TYPE_CHECKING:
    from ishiki_host.addresses.ids import Target
    from ishiki_host.core.entries import Entry

__all__ = ["SCAN_LIMIT", "STOP_EVENT", "TailState", "scan_tail"]

STOP_EVENT = "runtime.stop"
SCAN_LIMIT = 500  # entries read back at start


@dataclass
class TailState:
    """What the newest entries of a log say (see the module docstring)."""

    pending: list[Entry] = field(default_factory=list)
    undecided: list[Entry] = field(default_factory=list)
    target: Target | None = None


def scan_tail(newest_first: Iterator[Entry]) -> TailState:
    """Inbound entries since the last turn ended (``pending``), those newer than the last clean stop too
    (``undecided``), and the channel of the newest inbound entry; all oldest first.

    Input appended while the last turn was ending (after its last model answer, before its end event) came
    too late for that turn: it counts as since the turn ended. The live runtime decides on it right after
    the turn; a crash in between must not leave it unanswered.
    """
    state = TailState()
    collecting, deciding, late = True, True, False
    for count, entry in enumerate(newest_first):
        if count >= SCAN_LIMIT:
            break
        if entry.type == "event" and entry.name == STOP_EVENT:
            deciding = False
        elif entry.type == "event" and (entry.name or "").startswith("turn."):
            late = collecting and entry.name in TURN_END_EVENTS
            collecting = False
            deciding = deciding and late
        elif late and entry.type == "message" and entry.data.get("role") == "assistant":
            late = deciding = False
        if is_inbound(entry):
            if collecting or late:
                state.pending.append(entry)
            if deciding:
                state.undecided.append(entry)
            state.target = state.target or source_target(entry)
            if not (collecting or late):
                break
    state.pending.reverse()
    state.undecided.reverse()
    return state
