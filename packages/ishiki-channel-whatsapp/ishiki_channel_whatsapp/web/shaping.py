"""Messages of a linked device shaped into ``IshikiEvent``s (plus the attachments to capture with them).

- What is not input is dropped before shaping (``drop_reason``): status updates and channels (``broadcast``,
  ``newsletter``), protocol traffic, reactions, and what the account's owner writes from another device, except
  in their own "Message yourself" chat when ``web.self_chat`` is on (talking to the persona on a personal number).
- Chats: a direct chat is ``private:<wa_id>`` (the other person's number, or ``<lid>@lid`` when WhatsApp tells
  only that); a group is ``group:<jid>``. The sender is ``<wa_id>`` too, named by their push name (what they call
  themselves) or, without one, the address book's name.
- A message is addressed (``mentions_self``) when it @mentions the account (by number or linked identity) or
  replies to one of its messages (then ``quote.from_self`` too). Every group message is dispatched, addressed
  or not: the host records them all, and its wake-up engines decide (``extra.mentionRequired`` says whether
  the group needs a mention: the account's ``web.mention_required`` or the group's override).
- An edit is a new ``message.created`` with the edited message's id and ``extra.editedAt``; a message deleted for
  everyone is ``message.deleted``. Media becomes lazy attachments (``media``); a kind of message this channel
  does not read is recorded as such: ``[<type>: ...]`` as its content and ``extra.unsupported``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_host import IshikiEvent, Json, Quote, User, channel_id

from ishiki_channel_whatsapp.web.jids import Jid
from ishiki_channel_whatsapp.web.media import media_found

if TYPE_CHECKING:
    from ishiki_host import InboundAttachment

    from ishiki_channel_whatsapp.web.config import WebSettings
    from ishiki_channel_whatsapp.web.wire import Identity, WireMessage

__all__ = ["Shaped", "Shaper"]

_NOT_CHATS = ("broadcast", "newsletter")


@dataclass(frozen=True, slots=True)
class Shaped:
    """One event to dispatch and the attachments the host captures for it."""

    event: IshikiEvent
    attachments: tuple[InboundAttachment, ...] = ()


class Shaper:
    """Shapes the messages of the account ``me`` (see the module docstring); ``fetcher`` downloads its media."""

    def __init__(self, me: Identity, settings: WebSettings, *, fetcher: str):
        self.me = me
        self.settings = settings
        self.fetcher = fetcher

    def drop_reason(self, message: WireMessage) -> str | None:
        """Why ``message`` is not input (``None``: it is)."""
        if message.chat.server in _NOT_CHATS:
            return f"a {message.chat.server} message (status updates and channels are not chats)"
        if not (message.chat.is_group or message.chat.is_person):
            return f"a message in {message.chat}, which is not a chat"
        if message.kind == "system":
            return "protocol traffic, not something anyone said"
        if message.kind == "reaction":
            return "a reaction"
        if message.from_me and not (self.settings.self_chat and self.is_self_chat(message.chat)):
            return "written by the account itself"
        return None

    def is_self_chat(self, chat: Jid) -> bool:
        """The account's own "Message yourself" chat."""
        return not chat.is_group and self.me.is_me(chat)

    def channel(self, message: WireMessage) -> str:
        """The host's channel id of ``message``'s chat."""
        if message.chat.is_group:
            return channel_id("group", str(message.chat))
        if message.from_me:
            return channel_id("private", self.me.phone)
        return channel_id("private", message.person.wa_id)

    def shape(self, message: WireMessage, *, name: str | None = None) -> Shaped:
        """The event of an input ``message`` (``name``: the sender's address-book name, when known)."""
        channel = self.channel(message)
        user = User(id=message.person.wa_id, name=message.push_name or name or None)
        if message.kind == "revoke":
            return Shaped(
                IshikiEvent(
                    kind="message.deleted",
                    platform="whatsapp",
                    self_id=self.me.phone,
                    channel_id=channel,
                    message_id=str(message.target_id),
                    timestamp=message.timestamp,
                    user=user,
                )
            )
        found = media_found(message.media, self.settings.max_download_bytes, self.fetcher)
        content = "\n".join(part for part in (message.text, *found.notes) if part)
        extra = self._extra(message)
        if message.kind == "unsupported":
            content = content or f"[{message.type_name}: a kind of WhatsApp message this channel does not read]"
            extra["unsupported"] = message.type_name
        if found.refused:
            extra["refusedFiles"] = found.refused
        quote = self._quote(message)
        mentioned = message.context is not None and any(self.me.is_me(who) for who in message.context.mentioned)
        event = IshikiEvent(
            kind="message.created",
            platform="whatsapp",
            self_id=self.me.phone,
            channel_id=channel,
            message_id=str(message.target_id) if message.kind == "edit" else message.id,
            timestamp=message.timestamp,
            user=user,
            content=content,
            quote=quote,
            mentions_self=mentioned or bool(quote and quote.from_self),
            extra=extra,
        )
        return Shaped(event, tuple(found.attachments))

    def _extra(self, message: WireMessage) -> dict[str, Json]:
        extra: dict[str, Json] = {"chatType": "group" if message.chat.is_group else "private"}
        extra["messageType"] = message.type_name
        if message.chat.is_group:
            extra["mentionRequired"] = self.settings.requires_mention(str(message.chat))
        if message.kind == "edit":
            extra["editedAt"] = message.timestamp
        if message.from_me:
            extra["selfChat"] = True
        if message.media is not None:
            extra["mediaKind"] = message.media.kind
        return extra

    def _quote(self, message: WireMessage) -> Quote | None:
        context = message.context
        if context is None or context.quoted_id is None:
            return None
        sender = context.quoted_sender
        user = User(id=sender.wa_id) if sender is not None and sender.is_person else None
        return Quote(message_id=context.quoted_id, text=context.quoted_text, user=user, from_self=self.me.is_me(sender))
