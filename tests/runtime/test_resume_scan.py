"""``scan_tail``: which inbound messages a runtime must still decide on when it starts from its log."""

from __future__ import annotations

from typing import Any

from ishiki_host.core.entries import Entry
from ishiki_host.runtime.tail import STOP_EVENT, scan_tail

SOURCE = {"platform": "telegram", "selfId": "1", "channelId": "private:7", "messageId": "m"}


def log(*spec: tuple[str, Any]) -> list[Entry]:
    """Entries, oldest first, from ``(kind, value)``: ``in`` text, ``out`` (an assistant answer), ``tool``, or an
    ``event`` name; turn numbers as the runtime writes them (inbound input has none)."""
    entries = []
    for number, (kind, value) in enumerate(spec, start=1):
        if kind == "in":
            data: dict[str, Any] = {"role": "user", "parts": [{"type": "text", "text": value}], "source": SOURCE}
            entries.append(Entry(number, "message", float(number), data))
        elif kind in ("out", "tool"):
            role = "assistant" if kind == "out" else "tool"
            entries.append(Entry(number, "message", float(number), {"role": role, "parts": []}, turn=1))
        else:
            entries.append(
                Entry(number, "event", float(number), {"name": value}, turn=1 if value != STOP_EVENT else None)
            )
    return entries


def texts(entries: list[Entry]) -> list[str]:
    return [e.data["parts"][0]["text"] for e in entries]


def scanned(entries: list[Entry]) -> tuple[list[str], list[str]]:
    state = scan_tail(iter(reversed(entries)))
    return texts(state.pending), texts(state.undecided)


def test_input_after_the_last_turn_is_pending_and_undecided() -> None:
    entries = log(("in", "a"), ("event", "turn.start"), ("out", 0), ("tool", 0), ("event", "turn.done"), ("in", "b"))
    assert scanned(entries) == (["b"], ["b"])


def test_input_that_came_while_the_turn_was_ending_is_still_owed_a_decision() -> None:
    # the crash test's case: "b" joined after the turn's last model answer, the turn ended without a step for it
    entries = log(("in", "a"), ("event", "turn.start"), ("out", 0), ("tool", 0), ("in", "b"), ("event", "turn.done"))
    assert scanned(entries) == (["b"], ["b"])


def test_input_the_turn_saw_is_not_decided_again() -> None:
    entries = log(("event", "turn.start"), ("in", "a"), ("out", 0), ("tool", 0), ("event", "turn.done"))
    assert scanned(entries) == ([], [])


def test_after_a_clean_stop_late_input_is_pending_but_was_decided() -> None:
    entries = log(("event", "turn.start"), ("out", 0), ("in", "b"), ("event", "turn.done"), ("event", STOP_EVENT))
    assert scanned(entries) == (["b"], [])
