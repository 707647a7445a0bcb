"""Fact-log entries: one JSON object per line, ``{id, type, ts, turn?, data}``.

Entries are facts: never edited, never removed. Compaction, session boundaries and catalogue changes are
expressed by appending more entries. ``id`` increases by one per entry within a log; ``turn`` is the number
of the turn the entry belongs to, absent for entries written outside a turn.

Entry types (``type``) and their ``data``:

- ``message``: a ``Message.to_dict()`` (``role``, ``parts``, ``tool_calls``, ``tool_call_id``...) plus, for
  platform input, ``source`` (the shaped event: platform, selfId, channelId, messageId, user, ...), and for
  assistant messages ``usage`` and ``model``.
- ``event``: ``{"name": "turn.start" | "turn.done" | "turn.failed" | "turn.aborted" | ..., ...}``.
- ``usage``: tokens of a call made outside a turn (summarizer, judge, heartbeat without a target).
- ``session``: a session boundary (``reason``: clear | compact | ...; ``summary`` when seeded).
- ``compact``: a summary that stands for the entries before ``upto`` (an entry id).
- ``catalog``: tool-catalogue changes (toolsearch discoveries).
- ``narrative``: the story state of the narrative context engine (``present``, ``situation``, ``threads``,
  ``intent``), standing for every entry up to ``upto`` as a ``compact`` entry does.
- ``custom``: anything an engine or extension records (``kind`` names it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from ishiki_host.jsontypes import Json

__all__ = ["Entry", "EntryType"]

EntryType = str
"""``message``, ``event``, ``usage``, ``session``, ``compact``, ``catalog``, ``narrative``, ``custom``, or a plugin's
own."""

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)  # one, not one per line


@dataclass(frozen=True, slots=True)
class Entry:
    """One fact."""

    id: int
    type: EntryType
    ts: float
    data: Mapping[str, Json] = field(default_factory=dict)
    turn: int | None = None

    def to_json(self) -> str:
        """The JSONL line, without its newline."""
        out: dict[str, Json] = {"id": self.id, "type": self.type, "ts": self.ts}
        if self.turn is not None:
            out["turn"] = self.turn
        out["data"] = self.data
        return _ENCODER.encode(out)

    @classmethod
    def from_json(cls, line: str | bytes) -> Entry:
        """Parse one JSONL line; raises ``ValueError`` (or ``KeyError``/``TypeError``) on a bad line."""
        raw = json.loads(line)
        if not isinstance(raw, dict) or not isinstance(raw.get("data", {}), dict):
            raise ValueError("an entry must be a JSON object with an object 'data'")
        turn = raw.get("turn")
        return cls(
            id=int(raw["id"]),
            type=str(raw["type"]),
            ts=float(raw["ts"]),
            data=raw.get("data", {}),
            turn=int(turn) if turn is not None else None,
        )

    @property
    def name(self) -> str | None:
        """For ``event`` entries, the event name."""
        value = self.data.get("name")
        return value if isinstance(value, str) else None

    @property
    def upto(self) -> int:
        """For ``compact`` and ``narrative`` entries, the id of the last entry they stand for (0 when malformed)."""
        value = self.data.get("upto")
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return 0
        try:
            return int(value)
        except (ValueError, OverflowError):  # "x", NaN, Infinity
            return 0
