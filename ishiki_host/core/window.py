"""The default context window: which entries a step sees, and how they become model messages.

These are the defaults behind ``AgentHooks.select_entries`` and ``AgentHooks.project``; context engines
replace them (and may call them through ``super()``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from ishiki_host.core.entries import Entry
from ishiki_host.core.messages import Message

__all__ = ["SUMMARY_HEADER", "project_entries", "project_entry", "select_session_window"]

logger = logging.getLogger(__name__)

SUMMARY_HEADER = "Summary of the conversation so far:"
_ROLES = ("system", "user", "assistant", "tool")  # other roles (``custom``) are records, not model input


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
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    called: set[str] = set()
    out: list[Message] = []
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id in called:
                out.append(message)
            continue
        if message.tool_calls:
            kept = tuple(c for c in message.tool_calls if c.id in answered)
            called.update(c.id for c in kept)
            if len(kept) != len(message.tool_calls):
                message = Message(message.role, message.parts, kept)
                if not message.parts and not kept:
                    continue
        out.append(message)
    return out
