"""Cloud API messages shaped into ``IshikiEvent``s (plus the attachments to capture with them).

- Every message is a ``message.created`` event whose ``message_id`` is its ``wamid`` (the identity by which
  the host, and ``SeenIds``, recognise a redelivery), dated by its own ``timestamp``.
- Chats: ``private:<wa_id>`` (the Cloud API's chats are one-to-one); a message carrying a ``group_id`` is in
  ``group:<group_id>``. The sender is ``User(<wa_id>, <contacts[].profile.name>)``, trusted as
  ``whatsapp:<wa_id>``.
- ``text`` is its body; ``image``, ``document``, ``audio``, ``video`` and ``sticker`` bring one lazy
  attachment, with the caption as content. Every other type is recorded as what it is: its content names it
  in brackets (``[location: Tea house (52.5, 13.4)]``, ``[reaction 👍]``, ``[button] Yes``, ``[unsupported]``)
  and ``extra[<type>]`` keeps its object as sent. A reaction quotes the message it reacts to.
- ``context.id`` (a reply) becomes the quote; ``from_self`` (and ``mentions_self``) when the quoted message is
  one this number sent.
- ``extra``: ``type`` always; ``forwarded`` when Meta says so; ``groupId``.
- Messages are decoded JSON and trusted in nothing: one without a string ``id`` and ``from`` or a numeric
  ``timestamp`` is malformed (``EventInvalid``), never a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host import IshikiEvent, Quote, User, channel_id
from ishiki_host.errors import EventInvalid

from ishiki_channel_whatsapp.cloud.media import MEDIA_KINDS, attachment_of

if TYPE_CHECKING:
    from ishiki_host import InboundAttachment

    from ishiki_channel_whatsapp.cloud.payload import Change

__all__ = ["Shaped", "Shaper", "describe"]

PLATFORM = "whatsapp"


@dataclass(frozen=True, slots=True)
class Shaped:
    """One event to dispatch, the attachments the host captures for it, and the message as sent (kept when it
    is set aside)."""

    event: IshikiEvent
    attachments: tuple[InboundAttachment, ...] = ()
    raw: Mapping[str, Any] | None = None


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise EventInvalid(f"{what} is missing or malformed ({value!r})")
    return value


def _timestamp(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise EventInvalid(f"message.timestamp is missing or malformed ({value!r})") from None


class Shaper:
    """Shapes the messages of the number ``phone_number_id``; ``own(wamid)`` tells a message it sent."""

    def __init__(self, phone_number_id: str, *, fetcher: str, own: Callable[[str], bool] = lambda wamid: False):
        self.phone_number_id = phone_number_id
        self.fetcher = fetcher
        self.own = own

    def shape(self, message: Any, change: Change) -> Shaped:
        """The event of one entry of a change's ``messages``; ``EventInvalid`` when it is malformed."""
        if not isinstance(message, dict):
            raise EventInvalid(f"a message is a {type(message).__name__}, not an object")
        wamid = _text(message.get("id"), "message.id")
        sender = _text(message.get("from"), "message.from")
        kind = str(message["type"]) if isinstance(message.get("type"), str) else "unknown"
        content, attachments, extra = self._body(kind, message)
        group = message.get("group_id")
        channel = channel_id("group", group) if isinstance(group, str) and group else channel_id("private", sender)
        if isinstance(group, str) and group:
            extra["groupId"] = group
        quote = self._quote(message, kind, change)
        event = IshikiEvent(
            kind="message.created",
            platform=PLATFORM,
            self_id=self.phone_number_id,
            channel_id=channel,
            message_id=wamid,
            timestamp=_timestamp(message.get("timestamp")),
            user=User(id=sender, name=change.names.get(sender)),
            content=content,
            quote=quote,
            mentions_self=bool(quote and quote.from_self),
            extra=extra,
        )
        return Shaped(event, attachments, message)

    def _body(self, kind: str, message: Mapping[str, Any]) -> tuple[str, tuple[InboundAttachment, ...], dict[str, Any]]:
        extra: dict[str, Any] = {"type": kind}
        context = message.get("context")
        if isinstance(context, dict) and (context.get("forwarded") or context.get("frequently_forwarded")):
            extra["forwarded"] = True
        item = message.get(kind)
        if kind == "text":
            body = item.get("body") if isinstance(item, dict) else None
            return (body if isinstance(body, str) else ""), (), extra
        if kind in MEDIA_KINDS and isinstance(item, dict):
            attachment = attachment_of(kind, item, self.fetcher)
            caption = item.get("caption") if isinstance(item.get("caption"), str) else ""
            if kind == "sticker" or attachment is None:
                extra[kind] = item
            # A caption is what was said; a sticker says "[sticker]", as a file without an id says what is missing.
            named = kind == "sticker" or attachment is None
            content = caption or (f"[{kind}]" if named else "")
            return content, ((attachment,) if attachment is not None else ()), extra
        if item is not None:
            extra[kind] = item
        if kind == "unsupported" or (kind == "unknown" and "errors" in message):
            extra["errors"] = message.get("errors")
        return describe(kind, item, message), (), extra

    def _quote(self, message: Mapping[str, Any], kind: str, change: Change) -> Quote | None:
        reaction = message.get("reaction")
        if kind == "reaction" and isinstance(reaction, dict) and isinstance(reaction.get("message_id"), str):
            target = reaction["message_id"]
            return Quote(message_id=target, from_self=self.own(target)) if target else None
        context = message.get("context")
        if not isinstance(context, dict) or not isinstance(context.get("id"), str) or not context["id"]:
            return None
        quoted = context["id"]
        author = _digits(context.get("from"))
        ours = author is not None and author == _digits(change.display_phone_number)
        return Quote(message_id=quoted, from_self=ours or self.own(quoted))


def _digits(number: Any) -> str | None:
    """The digits of a phone number as Meta writes it (``+1 555-0100`` and ``15550100`` are one number)."""
    if not isinstance(number, str):
        return None
    return "".join(ch for ch in number if ch.isdigit()) or None


def describe(kind: str, item: Any, message: Mapping[str, Any]) -> str:
    """What a message of a type without text says, in brackets: ``[location: name (lat, lon)]``..."""
    data: dict[str, Any] = item if isinstance(item, dict) else {}
    if kind == "location":
        place = ", ".join(str(data[key]) for key in ("name", "address") if isinstance(data.get(key), str))
        where = f"({data.get('latitude')}, {data.get('longitude')})"
        return f"[location: {place} {where}]" if place else f"[location: {where}]"
    if kind == "reaction":
        emoji = data.get("emoji")
        return f"[reaction {emoji}]" if isinstance(emoji, str) and emoji else "[reaction removed]"
    if kind == "contacts" and isinstance(item, list):
        shown = ", ".join(_contact_names(item))
        return f"[contacts: {shown}]" if shown else "[contacts]"
    if kind == "interactive":
        reply = data.get(str(data.get("type")))
        title = reply.get("title") if isinstance(reply, dict) else None
        return f"[{data.get('type', 'interactive')}] {title}" if isinstance(title, str) else "[interactive]"
    if kind == "button" and isinstance(data.get("text"), str):
        return f"[button] {data['text']}"
    errors = message.get("errors")
    if kind == "unsupported" or (kind == "unknown" and isinstance(errors, list)):
        titles = [str(e["title"]) for e in errors or [] if isinstance(e, dict) and isinstance(e.get("title"), str)]
        return f"[{kind}: {'; '.join(titles)}]" if titles else f"[{kind}]"
    return f"[{kind}]"


def _contact_names(contacts: list[Any]) -> list[str]:
    names = [contact.get("name") for contact in contacts if isinstance(contact, dict)]
    return [str(name["formatted_name"]) for name in names if isinstance(name, dict) and "formatted_name" in name]
