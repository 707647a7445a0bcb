"""The default context window: which entries a step sees, and how they become model messages.

These are the defaults behind ``AgentHooks.select_entries`` and ``AgentHooks.project``; context engines
replace them (and may call them through ``super()``). ``Projection`` is ``project_entries`` kept from step to
step, for an engine whose window mostly grows at its end: it projects only the entries added since the last
call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ishiki_host.core.entries import Entry
from ishiki_host.core.messages import Message

__all__ = ["SUMMARY_HEADER", "Projection", "extends", "project_entries", "project_entry", "select_session_window"]

logger = logging.getLogger(__name__)

SUMMARY_HEADER = "Summary of the conversation so far:"
_ROLES = ("system", "user", "assistant", "tool")  # other roles (``custom``) are records, not model input


def extends(items: Sequence[Any], prefix: Sequence[Any]) -> bool:
    """Whether ``items`` start with every item of a non-empty ``prefix``, in order (a window that grew at its
    end). The same objects compare at C speed, so a long window costs little to check."""
    known = len(prefix)
    return bool(known) and len(items) >= known and items[:known] == prefix


def select_session_window(newest_first: Iterator[Entry]) -> list[Entry]:
    """The entries of the current session, oldest first, read backwards only as far as needed.

    The window starts at the newest ``session`` entry (kept: it may carry a seed summary). The newest
    ``compact`` entry stands for every entry up to its ``upto`` id: it is kept, those entries are not, and
    older ``compact`` entries are superseded. A pure function of the entries, as ``FactLog.read_back`` needs.
    """
    window: list[Entry] = []
    upto: int | None = None
    for entry in newest_first:
        if upto is not None and entry.id <= upto:
            break
        if entry.type == "session":
            window.append(entry)
            break
        if entry.type == "compact":
            if upto is None:
                upto = entry.upto
                window.append(entry)
            continue
        window.append(entry)
    window.reverse()
    return window


def project_entries(entries: Iterable[Entry]) -> list[Message]:
    """Message entries become ``Message``s; seeded ``session`` and ``compact`` entries become a summary.

    Summaries are user-role messages (a system message in mid-conversation is not portable across providers).
    A tool result whose call is not in the window is dropped, and so is a tool call without a result, so a
    window cut anywhere still makes a request providers accept.
    """
    messages: list[Message] = []
    for entry in entries:
        message = project_entry(entry)
        if message is not None:
            messages.append(message)
    return _drop_unpaired_tool_messages(messages)


def project_entry(entry: Entry, *, warn: bool = True) -> Message | None:
    """The model message one entry becomes: a session or compact entry's summary, a message entry as it is;
    ``None`` for entries the model never sees and for malformed messages (logged unless ``warn`` is false)."""
    if entry.type in ("session", "compact"):
        summary = entry.data.get("summary")
        return Message.user(f"{SUMMARY_HEADER}\n{summary}") if isinstance(summary, str) and summary else None
    if entry.type != "message" or entry.data.get("role") not in _ROLES:
        return None
    try:
        return Message.from_dict(entry.data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if warn:
            logger.warning("fact log entry %s is not a valid message and was left out of the window: %s", entry.id, exc)
        return None


def _drop_unpaired_tool_messages(messages: list[Message]) -> list[Message]:
    pairing = _Pairing()
    pairing.add(messages)
    return pairing.out


class _Pairing:
    """The tool-pairing rule of ``project_entries``, fed in pieces: ``answered`` holds every result's call id
    (of all pieces), ``unanswered`` the ids of calls dropped for want of one, so a later piece answering one of
    them shows that the earlier output no longer stands."""

    def __init__(self) -> None:
        self.answered: set[str | None] = set()
        self.called: set[str] = set()
        self.unanswered: set[str] = set()
        self.out: list[Message] = []

    def answers_dropped(self, messages: list[Message]) -> bool:
        """Whether ``messages`` answer a call an earlier piece dropped."""
        return any(m.role == "tool" and m.tool_call_id in self.unanswered for m in messages)

    def add(self, messages: list[Message]) -> None:
        self.answered.update(m.tool_call_id for m in messages if m.role == "tool")
        for message in messages:
            if message.role == "tool":
                if message.tool_call_id in self.called:
                    self.out.append(message)
                continue
            if message.tool_calls:
                kept = tuple(c for c in message.tool_calls if c.id in self.answered)
                self.called.update(c.id for c in kept)
                if len(kept) != len(message.tool_calls):
                    self.unanswered.update(c.id for c in message.tool_calls if c.id not in self.answered)
                    message = Message(message.role, message.parts, kept)
                    if not message.parts and not kept:
                        continue
            self.out.append(message)


class Projection:
    """``project_entries`` with ``project_one`` in place of ``project_entry``, kept between calls.

    A call whose entries extend the last call's (the same entries, in order, then more) projects only the new
    ones and reuses the messages made before, unless the new ones answer a tool call the earlier output left
    out (then, and for any other window, it projects the whole window again). ``project_one`` must be a pure
    function of the entry. ``rebuilds`` counts the calls that projected the whole window.
    """

    def __init__(self, project_one: Callable[[Entry], Message | None] = project_entry):
        self._project_one = project_one
        self._entries: list[Entry] = []
        self._pairing = _Pairing()
        self.rebuilds = 0

    def __call__(self, entries: list[Entry]) -> list[Message]:
        """The messages of ``entries``, as ``project_entries`` makes them."""
        known = len(self._entries)
        if extends(entries, self._entries):
            new = self._messages(entries[known:])
            if not self._pairing.answers_dropped(new):
                self._pairing.add(new)
                self._entries.extend(entries[known:])
                return list(self._pairing.out)
        self.rebuilds += 1
        self._pairing = _Pairing()
        self._pairing.add(self._messages(entries))
        self._entries = list(entries)
        return list(self._pairing.out)

    def clear(self) -> None:
        """Forget the last window (and give its messages back)."""
        self._entries, self._pairing = [], _Pairing()

    def _messages(self, entries: Iterable[Entry]) -> list[Message]:
        return [m for m in map(self._project_one, entries) if m is not None]
