"""Telegram updates shaped into ``IshikiEvent``s (plus the attachments to capture with them).

- ``message`` / ``channel_post``: a ``message.created`` event. Text or caption is the content; notes about
  files too large to download follow it on their own lines. The sender is ``sender_chat`` when a message speaks
  for a chat (anonymous admins, channel posts), else ``from``.
- ``edited_message`` / ``edited_channel_post``: a new ``message.created`` with the same message id, the new
  text, and ``extra.editedAt`` (the edit time, also its timestamp). The record keeps both versions; a reader
  tells them apart by ``editedAt``.
- ``deleted_business_messages``: one ``message.deleted`` per id. (The Bot API reports deletions only for
  business chats; a deletion in an ordinary chat is never seen.)
- Chats: ``private`` → ``private:<chat id>``; ``group``, ``supergroup`` and ``channel`` → ``group:<chat id>``.
- The bot is addressed (``mentions_self``) by an ``@username`` mention (any case), a ``text_mention`` of its
  id, a ``/command@username``, or a reply to one of its messages (then ``quote.from_self`` too).
- Updates are decoded JSON and trusted in nothing: objects are checked to be ``dict``, arrays ``list``; a
  message that breaks that is malformed (``EventInvalid``), never a crash.
- ``extra``: ``updateId`` always; ``chatType``, ``chatTitle``, ``username`` (the sender's @name), ``threadId``,
  ``editedAt``, ``refusedFiles``, ``sticker`` when they apply; ``mentionRequired`` on every group event (the
  account's or the chat's policy: whether only an addressed message may start a turn).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host import IshikiEvent, Quote, User, channel_id
from ishiki_host.errors import EventInvalid

from ishiki_channel_telegram.entities import BotIdentity, mentions_bot
from ishiki_channel_telegram.media import find_media

if TYPE_CHECKING:
    from ishiki_host import InboundAttachment

    from ishiki_channel_telegram.config import TelegramAccount

__all__ = ["MESSAGE_KINDS", "Shaped", "Shaper", "update_kind"]

MESSAGE_KINDS = ("message", "edited_message", "channel_post", "edited_channel_post")
_HANDLED = (*MESSAGE_KINDS, "deleted_business_messages")
_QUOTE_CHARS = 1000


@dataclass(frozen=True, slots=True)
class Shaped:
    """One event to dispatch and the attachments the host captures for it."""

    event: IshikiEvent
    attachments: tuple[InboundAttachment, ...] = ()
    chat_id: int = 0


def update_kind(update: Mapping[str, Any]) -> str | None:
    """The kind of an update the channel handles (``message``...), or ``None`` for any other kind."""
    return next((kind for kind in _HANDLED if kind in update), None)


def _require(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise EventInvalid(f"{what} is missing or malformed ({value!r})")
    return value


class Shaper:
    """Shapes the updates of one bot (``bot``) on one account."""

    def __init__(self, bot: BotIdentity, account: TelegramAccount, *, fetcher: str):
        self.bot = bot
        self.account = account
        self.fetcher = fetcher
        self.platform_self_id = str(bot.id)

    def shape(self, update: Mapping[str, Any], now: float) -> list[Shaped]:
        """The events of ``update`` (none for a service message); ``EventInvalid`` when it is malformed."""
        update_id = _require(update.get("update_id"), int, "update_id")
        kind = update_kind(update)
        if kind == "deleted_business_messages":
            return self._deleted(update[kind], update_id, now)
        if kind is None:
            return []
        message = _require(update[kind], dict, kind)
        shaped = self._message(message, update_id, edited=kind.startswith("edited_"))
        return [shaped] if shaped is not None else []

    def _message(self, message: Mapping[str, Any], update_id: int, *, edited: bool) -> Shaped | None:
        chat = _require(message.get("chat"), dict, "message.chat")
        chat_id = _require(chat.get("id"), int, "message.chat.id")
        chat_type = _require(chat.get("type"), str, "message.chat.type")
        message_id = _require(message.get("message_id"), int, "message.message_id")
        date = _require(message.get("edit_date" if edited else "date"), int, "message.date")
        text = message.get("text") if isinstance(message.get("text"), str) else message.get("caption")
        text = text if isinstance(text, str) else ""
        entities = message.get("entities") if "text" in message else message.get("caption_entities")
        media = find_media(message, self.account.max_download_bytes, self.fetcher)
        if not text and not media.attachments and not media.notes:
            return None  # a service message (a member joined, a pin...): nothing said
        quote = self._quote(message)
        addressed = mentions_bot(text, entities if isinstance(entities, list) else (), self.bot)
        channel = channel_id("private", chat_id) if chat_type == "private" else channel_id("group", chat_id)
        extra = self._extra(message, chat, update_id, channel, edited=edited)
        if media.refused:
            extra["refusedFiles"] = media.refused
        event = IshikiEvent(
            kind="message.created",
            platform="telegram",
            self_id=self.platform_self_id,
            channel_id=channel,
            message_id=str(message_id),
            timestamp=float(date),
            user=_sender(message, chat),
            content="\n".join([text, *media.notes]) if text else "\n".join(media.notes),
            quote=quote,
            mentions_self=addressed or bool(quote and quote.from_self),
            extra=extra,
        )
        return Shaped(event, tuple(media.attachments), chat_id)

    def _extra(
        self, message: Mapping[str, Any], chat: Mapping[str, Any], update_id: int, channel: str, *, edited: bool
    ) -> dict[str, Any]:
        extra: dict[str, Any] = {"updateId": update_id, "chatType": chat["type"]}
        if isinstance(chat.get("title"), str):
            extra["chatTitle"] = chat["title"]
        sender = message.get("from")
        if isinstance(sender, dict) and isinstance(sender.get("username"), str):
            extra["username"] = sender["username"]
        if isinstance(message.get("message_thread_id"), int):
            extra["threadId"] = message["message_thread_id"]
        if edited:
            extra["editedAt"] = message["edit_date"]
        sticker = message.get("sticker")
        if isinstance(sticker, dict):
            extra["sticker"] = {key: sticker[key] for key in ("emoji", "set_name") if isinstance(sticker.get(key), str)}
        if not channel.startswith("private:"):
            extra["mentionRequired"] = self.account.requires_mention(channel)
        return extra

    def _quote(self, message: Mapping[str, Any]) -> Quote | None:
        reply = message.get("reply_to_message")
        if not isinstance(reply, dict) or not isinstance(reply.get("message_id"), int):
            return None
        if "forum_topic_created" in reply:
            return None  # in a forum every message "replies" to its topic's first message
        part = message.get("quote")
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            text = part["text"]
        else:
            text = reply.get("text") if isinstance(reply.get("text"), str) else reply.get("caption")
            text = text if isinstance(text, str) else ""
        if len(text) > _QUOTE_CHARS:
            text = text[:_QUOTE_CHARS] + "…"
        sender = reply.get("from")
        from_self = isinstance(sender, dict) and sender.get("id") == self.bot.id
        chat = reply.get("chat")
        user = _sender(reply, chat if isinstance(chat, dict) else {}, required=False)
        return Quote(message_id=str(reply["message_id"]), text=text, user=user, from_self=from_self)

    def _deleted(self, payload: Any, update_id: int, now: float) -> list[Shaped]:
        payload = _require(payload, dict, "deleted_business_messages")
        chat = _require(payload.get("chat"), dict, "deleted_business_messages.chat")
        chat_id = _require(chat.get("id"), int, "deleted_business_messages.chat.id")
        ids = _require(payload.get("message_ids"), list, "deleted_business_messages.message_ids")
        channel = channel_id("private", chat_id)
        return [
            Shaped(
                IshikiEvent(
                    kind="message.deleted",
                    platform="telegram",
                    self_id=self.platform_self_id,
                    channel_id=channel,
                    message_id=str(_require(message_id, int, "a deleted message id")),
                    timestamp=now,
                    extra={"updateId": update_id},
                ),
                chat_id=chat_id,
            )
            for message_id in ids
        ]


def _sender(message: Mapping[str, Any], chat: Mapping[str, Any], *, required: bool = True) -> User | None:
    for source in (message.get("sender_chat"), message.get("from")):
        if isinstance(source, dict) and isinstance(source.get("id"), int):
            return User(id=str(source["id"]), name=_display_name(source))
    if isinstance(chat.get("id"), int) and chat.get("type") == "channel":
        return User(id=str(chat["id"]), name=_display_name(chat))
    if required:
        raise EventInvalid("the message has no sender (from / sender_chat)")
    return None


def _display_name(source: Mapping[str, Any]) -> str | None:
    if isinstance(source.get("title"), str):
        return str(source["title"])
    parts = [source.get(key) for key in ("first_name", "last_name")]
    name = " ".join(part for part in parts if isinstance(part, str) and part)
    return name or (f"@{source['username']}" if isinstance(source.get("username"), str) else None)
