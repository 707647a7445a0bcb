"""Who and where an inbound message entry is about: its sender and its chat, read from the stored event.

An inbound message keeps its platform event in ``data.source`` (``IshikiEvent.to_dict``). A sender is
``platform:userId``; a chat is ``platform:selfId channelId`` (the sid and channel id, as ``Target`` prints
them). These are how memories record where they were made and whom they involve (``memory.scope``), and how
trust names a sender.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry

__all__ = ["chat_coordinates", "entry_chat", "entry_sender", "sender_key"]


def sender_key(source: Mapping[str, Any]) -> str | None:
    """``platform:userId`` of a stored event (``data.source``), or ``None`` when it names no sender."""
    user = source.get("user")
    platform = source.get("platform")
    if not isinstance(user, Mapping) or not isinstance(platform, str) or not user.get("id"):
        return None
    return f"{platform}:{user['id']}"


def entry_sender(entry: Entry) -> str | None:
    """The sender of an inbound message entry (from its stored event), if it names one."""
    source = entry.data.get("source")
    return sender_key(source) if isinstance(source, Mapping) else None


def chat_coordinates(entry: Entry) -> tuple[str, str] | None:
    """``(platform:selfId, channelId)`` of the chat an inbound message entry came from, if its event says."""
    source = entry.data.get("source")
    if not isinstance(source, Mapping):
        return None
    platform, self_id, channel = source.get("platform"), source.get("selfId"), source.get("channelId")
    if not (isinstance(platform, str) and isinstance(self_id, str) and isinstance(channel, str)):
        return None
    return f"{platform}:{self_id}", channel


def entry_chat(entry: Entry) -> str | None:
    """``platform:selfId channelId`` of the chat an inbound message entry came from, if its event says."""
    found = chat_coordinates(entry)
    return f"{found[0]} {found[1]}" if found is not None else None
