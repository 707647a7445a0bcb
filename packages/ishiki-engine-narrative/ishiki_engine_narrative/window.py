"""Which entries a step sees, and how they become messages.

The newest ``narrative`` entry of the session stands for every entry up to its ``upto`` id: the window holds
only the entries after ``upto`` (plus the last few covered messages verbatim, ``recent``), because the story
carries the older past. All functions over the log here are pure functions of the entries read newest first,
as ``FactLog.read_back`` needs.

A ``session`` entry (``/clear``, ``/compact``) ends the story: a narrative written before it does not carry
over (a seeded session's summary is projected instead). A ``compact`` entry written by another part of the
host after the narrative's ``upto`` is kept like the default window keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ishiki_host import Entry, Message, project_entries

from ishiki_engine_narrative.story import ENTRY_TYPE

__all__ = ["SCAN_MAX", "Scan", "is_message", "latest_narrative", "project_window", "scan_window"]

SCAN_MAX = 20_000
"""Entries read back at most looking for the narrative (a session that never had one)."""
_ROLES = ("system", "user", "assistant", "tool")


def is_message(entry: Entry) -> bool:
    """Whether ``entry`` is a message a model may see (not a ``custom`` record)."""
    return entry.type == "message" and entry.data.get("role") in _ROLES


@dataclass(frozen=True)
class Scan:
    """What reading back found.

    ``narrative`` is the newest narrative entry of the session (``None`` before the first update).
    ``after`` are the entries after its ``upto`` (or since the session began), oldest first, at most ``limit``
    messages of them; ``skipped`` counts the older messages past that limit, which no model will see.
    ``recent`` are the last messages the narrative covers, kept verbatim. ``opening`` is the ``session`` or
    ``compact`` entry the window starts with, if any.
    """

    narrative: Entry | None = None
    after: tuple[Entry, ...] = ()
    recent: tuple[Entry, ...] = ()
    opening: Entry | None = None
    skipped: int = 0

    @property
    def window(self) -> list[Entry]:
        """The entries of the step's window, oldest first."""
        head = [self.opening] if self.opening is not None else []
        return [*head, *self.recent, *self.after]

    @property
    def messages_after(self) -> int:
        """How many messages came after the narrative."""
        return sum(1 for entry in self.after if is_message(entry))


@dataclass
class _Reader:
    recent: int
    limit: int
    narrative: Entry | None = None
    upto: int | None = None
    floor: int | None = None  # a newer ``compact`` entry covers every id up to this one
    opening: Entry | None = None
    after: list[Entry] = field(default_factory=list)
    kept: list[Entry] = field(default_factory=list)
    messages: int = 0
    skipped: int = 0

    def read(self, newest_first: Iterator[Entry]) -> Scan:
        for count, entry in enumerate(newest_first):
            if count >= SCAN_MAX or not self._take(entry):
                break
        self.after.reverse()
        self.kept.reverse()
        return Scan(self.narrative, tuple(self.after), tuple(self.kept), self.opening, self.skipped)

    def _take(self, entry: Entry) -> bool:
        """Consider one entry; ``False`` once nothing older matters."""
        if self.upto is not None and entry.id <= self.upto:
            return self._keep_recent(entry)
        if entry.type == ENTRY_TYPE:
            if self.narrative is None:
                self.narrative, self.upto = entry, entry.upto
                if self.floor is not None and self.floor >= self.upto:
                    return False  # the compact entry already stands for all the narrative covers
            return True
        if entry.type == "session":
            self.opening = self.opening or entry
            return False
        if entry.type == "compact":
            if self.floor is None:
                self.floor, self.opening = entry.upto, entry
            return True
        if self.floor is not None and entry.id <= self.floor:
            return True  # covered by the compaction; read on only to find the narrative
        if self.messages >= self.limit:
            self.skipped += is_message(entry)
            return True
        self.after.append(entry)
        self.messages += is_message(entry)
        return True

    def _keep_recent(self, entry: Entry) -> bool:
        if entry.type == "session" or self.floor is not None or len(self.kept) >= self.recent:
            return False
        if is_message(entry):
            self.kept.append(entry)
        return True


def scan_window(newest_first: Iterator[Entry], *, recent: int, limit: int) -> Scan:
    """Read back to the newest narrative (or the session start); see ``Scan``."""
    return _Reader(recent=recent, limit=limit).read(newest_first)


def latest_narrative(newest_first: Iterator[Entry]) -> Entry | None:
    """The newest narrative entry of the current session, or ``None``."""
    for count, entry in enumerate(newest_first):
        if entry.type == ENTRY_TYPE:
            return entry
        if entry.type == "session" or count >= SCAN_MAX:
            return None
    return None


def project_window(entries: Iterable[Entry]) -> list[Message]:
    """The window as model messages: the default projection, with who wrote each platform message.

    An inbound message becomes ``"<name> (<user id>): <text>"``; a wake prompt ``"(wake-up) <text>"``.
    Assistant messages with neither text nor calls (a step whose pipeline chose to do nothing) are left out.
    """
    shown = [_with_sender(entry) for entry in entries]
    return [m for m in project_entries(shown) if m.role != "assistant" or m.parts or m.tool_calls]


def _with_sender(entry: Entry) -> Entry:
    if not is_message(entry) or entry.data.get("role") != "user":
        return entry
    prefix = _sender(entry.data)
    if not prefix:
        return entry
    parts = list(entry.data.get("parts") or [])
    index = next((i for i, p in enumerate(parts) if isinstance(p, dict) and p.get("type") == "text"), None)
    if index is None:
        parts.insert(0, {"type": "text", "text": prefix.rstrip()})
    else:
        parts[index] = {**parts[index], "text": prefix + str(parts[index].get("text", ""))}
    return replace(entry, data={**entry.data, "parts": parts})


def _sender(data: Any) -> str:
    if data.get("wake"):
        return "(wake-up) "
    source = data.get("source")
    user = source.get("user") if isinstance(source, dict) else None
    if not isinstance(user, dict):
        return ""
    name, uid = str(user.get("name") or "").strip(), str(user.get("id") or "").strip()
    if name and uid:
        return f"{name} ({uid}): "
    return f"{name or uid}: " if name or uid else ""
