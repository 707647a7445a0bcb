"""What wakeup engines read from fact-log entries: is this an inbound platform message, and what is it like.

An inbound message is a ``message`` entry with role ``user``, not a wake prompt, whose ``data.source`` is the
shaped event of kind ``message.created`` (``runtime.deliver`` appends these). The bot's own messages are never
inbound: it speaks through tool calls (assistant and tool entries), and channels drop the platform's echoes of
what it sent by message id before they reach the log. Every wakeup engine decides from these helpers, so they
agree on what counts as a message, which channel it is in, and what it says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host.engines.wakeup._features import MessageFeatures

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry

__all__ = [
    "channel_key",
    "inbound_source",
    "is_direct",
    "message_features",
    "message_text",
    "quotes_self",
    "source_channel",
]


def inbound_source(entry: Entry) -> Mapping[str, Any] | None:
    """The shaped event of an inbound platform message; ``None`` for anything else."""
    data = entry.data
    source = data.get("source")
    if entry.type != "message" or data.get("role") != "user" or data.get("wake") or not isinstance(source, Mapping):
        return None
    if source.get("kind", "message.created") != "message.created":
        return None
    return source


def is_direct(source: Mapping[str, Any]) -> bool:
    """Whether the message came in a direct (private) chat; the channel id's kind wins over ``isDirect``."""
    channel = source.get("channelId")
    if isinstance(channel, str) and channel.partition(":")[0] in ("private", "group"):
        return channel.startswith("private:")
    return bool(source.get("isDirect"))


def quotes_self(source: Mapping[str, Any]) -> bool:
    """Whether the message quotes (replies to) one of the bot's messages."""
    quote = source.get("quote")
    return isinstance(quote, Mapping) and bool(quote.get("fromSelf"))


def message_text(entry: Entry) -> str:
    """The plain text of a message entry: its text parts, else the source's ``content``."""
    parts = entry.data.get("parts") or ()
    text = "".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and p.get("type", "text") == "text")
    source = entry.data.get("source")
    content = source.get("content") if isinstance(source, Mapping) else None
    return text or (content if isinstance(content, str) else "")


def message_features(entry: Entry) -> MessageFeatures | None:
    """The features wakeup models score an inbound message by; ``None`` when ``entry`` is not inbound."""
    source = inbound_source(entry)
    if source is None:
        return None
    return MessageFeatures(
        mentions_self=bool(source.get("mentionsSelf")),
        quotes_self=quotes_self(source),
        is_direct=is_direct(source),
        text=message_text(entry),
    )


def channel_key(sid: str | None, channel_id: str | None) -> str:
    """The key a wakeup engine keeps per-channel state under: ``<sid> <channelId>`` (either may be missing).

    Cross-mode runtimes hear several bot accounts, and two accounts can see chats with the same id, so the
    account is part of the key; ``message.sent`` carries the same two coordinates.
    """
    return f"{sid or '-'} {channel_id or '-'}"


def source_channel(source: Mapping[str, Any]) -> str:
    """The ``channel_key`` of an inbound message's source."""
    platform, self_id = source.get("platform"), source.get("selfId")
    sid = f"{platform}:{self_id}" if platform and self_id else None
    channel = source.get("channelId")
    return channel_key(sid, channel if isinstance(channel, str) else None)
