"""What wakeup engines read from fact-log entries: is this an inbound platform message, and what is it like.

An inbound message is a ``message`` entry with role ``user``, not a wake prompt, whose ``data.source`` is the
shaped event of kind ``message.created`` (``runtime.deliver`` appends these). The bot's own messages are never
inbound: it speaks through tool calls (assistant and tool entries), and channels drop the platform's echoes of
what it sent by message id before they reach the log. Every wakeup engine decides from these helpers, so they
agree on what counts as a message, which channel it is in, and what it says.

Two facts channels report in ``source.extra`` shape every engine's decision alike:

- **edits** (``extra.editedAt``: a new version of a message already recorded) never start a turn by
  themselves (``wake_source`` is ``None`` for them): fixing a typo must not get a second answer. The edit is
  in the log, so the next turn sees the new text;
- **open chats** (``extra.mentionRequired`` is ``false``: the operator set a group to need no mention) make
  every message there count as addressed to the bot (``addressed``): the standard engine answers it (rule
  ``open``), the willingness engine adds the ``at_mention`` gain, the jev engine applies its ``at_self`` rule.
  ``mentionRequired: true`` (or missing) changes nothing: the standard engine already needs a mention in
  groups, and willingness and jev are chosen to speak up unaddressed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host.engines.wakeup._features import MessageFeatures

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry

__all__ = [
    "addressed",
    "channel_key",
    "inbound_source",
    "is_direct",
    "is_edit",
    "is_open_chat",
    "message_features",
    "message_text",
    "quotes_self",
    "source_channel",
    "wake_source",
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


def wake_source(entry: Entry) -> Mapping[str, Any] | None:
    """The shaped event of an inbound message that may start a turn: ``inbound_source``, but not for an edit."""
    source = inbound_source(entry)
    return None if source is None or is_edit(source) else source


def _extra(source: Mapping[str, Any]) -> Mapping[str, Any]:
    extra = source.get("extra")
    return extra if isinstance(extra, Mapping) else {}


def is_edit(source: Mapping[str, Any]) -> bool:
    """Whether the message is a new version of one already recorded (``extra.editedAt``)."""
    return _extra(source).get("editedAt") is not None


def is_open_chat(source: Mapping[str, Any]) -> bool:
    """Whether the message came in a group configured to need no mention (``extra.mentionRequired: false``)."""
    return _extra(source).get("mentionRequired") is False and not is_direct(source)


def addressed(source: Mapping[str, Any]) -> bool:
    """Whether the message counts as addressed to the bot: it mentions the bot, or its chat is open."""
    return bool(source.get("mentionsSelf")) or is_open_chat(source)


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
    """The features wakeup models score an inbound message by; ``None`` when ``entry`` is not inbound or may
    not start a turn (an edit). ``mentions_self`` is ``addressed``: true in an open chat too."""
    source = wake_source(entry)
    if source is None:
        return None
    return MessageFeatures(
        mentions_self=addressed(source),
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
