"""What a turn's window may show: content above the turn's trust level becomes a placeholder.

A shared window (a group, or every chat of a cross-mode persona) holds what higher turns produced. Each entry's
level is stamped when it is written (``core.levels``); a turn sees an entry as it is when its level allows it,
and otherwise a placeholder that says what was hidden, never what it said:

- **A person's message** is shown when the turn's level reaches the sender's, or when it was said in a chat
  this turn is in (its people saw it: in channel mode every message of the runtime was). An owner's private
  message, in another chat of a cross-mode persona, is hidden from a group member's turn.
- **What a higher turn produced.** Its tool results are hidden, and so are the arguments of its tool calls,
  except for what it sent where this turn's people saw it: ``send_message`` in channel mode (or, in cross mode,
  to one of this turn's chats), and a reply written as text (``reply_with_text``) in channel mode. Its
  reasoning text beside tool calls is hidden. Calls and results stay paired, so the window is well formed.
- **A carried summary** (``session`` or ``compact`` entry) readable only above the turn's level is replaced by
  a line saying that an earlier part of the conversation is summarised but not readable here.

Content written before levels were stamped counts as ``trusted`` (``LEGACY_LEVEL``): hidden from untrusted
turns, shown to the others as before. Events and the host's own prompts carry no content of anyone's.

``Redaction`` is ``hide_above`` kept from step to step: a window that extends the last one, seen at the same
level from the same chats, has only its new entries looked at (and its placeholders stay the same objects).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import TYPE_CHECKING, Any

from ishiki_host.channels.inbound import is_inbound, source_target
from ishiki_host.core.entries import Entry
from ishiki_host.core.levels import CONTENT_TRUST, content_level
from ishiki_host.core.tools import trust_allows
from ishiki_host.core.window import extends

if TYPE_CHECKING:
    from ishiki_host.addresses.ids import Target
    from ishiki_host.core.tools import TrustLevel

__all__ = ["LEGACY_LEVEL", "Redaction", "hide_above"]

LEGACY_LEVEL: TrustLevel = "trusted"
_SEND = "send_message"
_WHO = {"owner": "the owner", "trusted": "a trusted person", "untrusted": "someone"}


def hide_above(entries: list[Entry], level: TrustLevel, chats: Set[Target] | None) -> list[Entry]:
    """``entries`` as a turn at ``level`` may see them. ``chats``: the chats the turn is in; ``None`` when the
    runtime is one chat (channel mode), so everything the persona sent there was seen by its people."""
    if level == "owner":
        return entries
    return [_visible(entry, level, chats) for entry in entries]


class Redaction:
    """``hide_above`` of one runtime's windows, kept between calls (see the module docstring)."""

    def __init__(self) -> None:
        self._seen: tuple[TrustLevel, frozenset[Target] | None] | None = None
        self._entries: list[Entry] = []
        self._shown: list[Entry] = []

    def clear(self) -> None:
        """Forget the last window."""
        self._seen, self._entries, self._shown = None, [], []

    def __call__(self, entries: list[Entry], level: TrustLevel, chats: Set[Target] | None) -> list[Entry]:
        """What ``hide_above(entries, level, chats)`` returns."""
        if level == "owner":
            return entries
        seen = (level, frozenset(chats) if chats is not None else None)
        if seen == self._seen and extends(entries, self._entries):
            new = entries[len(self._entries) :]
        else:
            self._seen, self._entries, self._shown, new = seen, [], [], entries
        self._entries.extend(new)
        self._shown.extend(_visible(entry, level, chats) for entry in new)
        return list(self._shown)


def _visible(entry: Entry, level: TrustLevel, chats: Set[Target] | None) -> Entry:
    if entry.type in ("session", "compact"):
        return _summary(entry, level)
    if entry.type != "message" or entry.data.get("wake"):
        return entry
    stamped = content_level(entry)
    if is_inbound(entry):
        sender = stamped or "owner"
        if trust_allows(level, sender) or chats is None or source_target(entry) in chats:
            return entry
        return _replace(entry, _user(f"[hidden: a message from {_WHO[sender]} in another chat]", sender))
    made = stamped or LEGACY_LEVEL
    if trust_allows(level, made):
        return entry
    role = entry.data.get("role")
    if role == "tool":
        name = entry.data.get("tool_name") or "a tool"
        text = f"[hidden: the result of {name} in a turn at {made} level]"
        return _replace(entry, {**entry.data, "parts": [{"type": "text", "text": text}]})
    if role == "assistant":
        return _replace(entry, _assistant(entry.data, made, chats))
    return entry


def _summary(entry: Entry, level: TrustLevel) -> Entry:
    summary = entry.data.get("summary")
    readers = content_level(entry) or LEGACY_LEVEL
    if not isinstance(summary, str) or not summary or trust_allows(level, readers):
        return entry
    text = (
        f"[hidden: the earlier conversation is summarised, but the summary covers what only {_WHO[readers]} may read]"
    )
    return _replace(entry, {**entry.data, "summary": text})


def _assistant(data: Mapping[str, Any], made: TrustLevel, chats: Set[Target] | None) -> dict[str, Any]:
    calls = [c for c in data.get("tool_calls") or () if isinstance(c, Mapping)]
    shown = []
    for call in calls:
        if call.get("name") == _SEND and _seen_here(call.get("arguments"), chats):
            shown.append(call)
        else:
            shown.append({**call, "arguments": {"hidden": f"the arguments of a call in a turn at {made} level"}})
    sent_as_text = not calls and chats is None  # reply_with_text went to this (only) chat
    parts = data.get("parts") or []
    if parts and not sent_as_text:
        parts = [{"type": "text", "text": f"[hidden: what you wrote in a turn at {made} level]"}]
    out = {**data, "parts": parts}
    if calls:
        out["tool_calls"] = shown
    return out


def _seen_here(arguments: object, chats: Set[Target] | None) -> bool:
    """Whether a ``send_message`` call sent where this turn's people saw it."""
    if chats is None:
        return True
    target = arguments.get("target") if isinstance(arguments, Mapping) else None
    if not isinstance(target, Mapping):
        return False
    return any(str(target.get("sid")) == t.sid and str(target.get("channelId")) == t.channel_id for t in chats)


def _user(text: str, level: TrustLevel) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "text": text}], CONTENT_TRUST: level}


def _replace(entry: Entry, data: Mapping[str, Any]) -> Entry:
    return Entry(entry.id, entry.type, entry.ts, dict(data), entry.turn)
