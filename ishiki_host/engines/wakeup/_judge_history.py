"""The conversation the ``jev`` judge reads: the last messages of one channel, from the fact log.

``chat_history`` is a pure selector for ``FactLog.read_back``: it walks the log newest first and keeps, oldest
first, up to ``limit`` lines of the channel:

- inbound platform messages of the channel, by their sender's name;
- what the bot said there: the ``text`` of its ``send_message`` calls (in cross mode only those whose
  ``target`` is the channel), and, when the profile sends plain answers (``reply_with_text``), the text of an
  assistant message without tool calls.

It stops at a ``session`` boundary (``/clear``: the judge must not see what the persona forgot) and after
``limit × 50`` entries, so a quiet channel in a busy cross-mode log costs a bounded read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host.engines.wakeup._inbound import inbound_source, message_text, source_channel
from ishiki_host.engines.wakeup.jev_model import ChatLine

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry

__all__ = ["SEND_TOOL", "chat_history"]

SEND_TOOL = "send_message"
_TEXT_KEYS = ("text", "content", "message")
_SCAN_FACTOR = 50


def chat_history(
    newest_first: Iterator[Entry], *, channel: str, limit: int, cross: bool, plain_replies: bool
) -> list[ChatLine]:
    """The channel's last ``limit`` lines, oldest first (see the module docstring)."""
    lines: list[ChatLine] = []
    for scanned, entry in enumerate(newest_first):
        if entry.type == "session" or scanned >= limit * _SCAN_FACTOR:
            break
        for line in reversed(_lines(entry, channel, cross=cross, plain_replies=plain_replies)):
            lines.append(line)
            if len(lines) >= limit:
                lines.reverse()
                return lines
    lines.reverse()
    return lines


def _lines(entry: Entry, channel: str, *, cross: bool, plain_replies: bool) -> list[ChatLine]:
    if entry.type != "message":
        return []
    source = inbound_source(entry)
    if source is not None:
        if source_channel(source) != channel:
            return []
        user = source.get("user")
        name = (user.get("name") or user.get("id")) if isinstance(user, Mapping) else None
        return [ChatLine(str(name or "someone"), message_text(entry))]
    if entry.data.get("role") != "assistant":
        return []
    calls = entry.data.get("tool_calls") or ()
    if not calls:
        text = message_text(entry).strip()
        return [ChatLine("", text, from_self=True)] if plain_replies and text and not cross else []
    said = (_sent_text(call, channel, cross) for call in calls if isinstance(call, Mapping))
    return [ChatLine("", text, from_self=True) for text in said if text]


def _sent_text(call: Mapping[str, Any], channel: str, cross: bool) -> str | None:
    arguments = call.get("arguments")
    if call.get("name") != SEND_TOOL or not isinstance(arguments, Mapping):
        return None
    if cross and not _targets(arguments.get("target"), channel):
        return None
    return next((v for k in _TEXT_KEYS if isinstance(v := arguments.get(k), str) and v.strip()), None)


def _targets(target: object, channel: str) -> bool:
    if not isinstance(target, Mapping):
        return False
    sid, channel_id = target.get("sid"), target.get("channelId")
    if not isinstance(sid, str) or not isinstance(channel_id, str):
        return False
    platform, _, self_id = sid.partition(":")
    return source_channel({"platform": platform, "selfId": self_id, "channelId": channel_id}) == channel
