"""What neonize hands over, read into plain typed records: the one place that knows its protobuf classes' fields.

neonize (0.5.x) gives every event as a protobuf message (``neonize.proto.Neonize_pb2``): ``Message`` (one
decrypted message: ``Info`` with ids, chat, sender and push name, and ``Message``, the WhatsApp content of
``WAWebProtobufsE2E.Message``), ``QR``, ``PairStatus``, ``Connected``, ``Disconnected``, ``LoggedOut``,
``ConnectFailure``... They are read by attribute here, without importing neonize (importing it loads its Go
core), and never trusted: a message without an id, a chat or a sender is ``EventInvalid``.

Content is found by the protobuf type of the field that carries it, after unwrapping the envelopes WhatsApp puts
around it (ephemeral, view-once, document-with-caption, edited, device-sent): text (``conversation``,
``extendedTextMessage``), media (image, video, video note, audio, voice note, document, sticker), an edit or a
revoke (``protocolMessage``), a reaction, a location, a contact card, a poll. Any other content is
``unsupported`` (recorded as such by the shaper); protocol traffic that says nothing (key shares, ephemeral
settings) is ``system``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ishiki_host import Json
from ishiki_host.errors import EventInvalid

from ishiki_channel_whatsapp.web.jids import LID, USER, Jid, parse_jid

__all__ = [
    "Context",
    "Identity",
    "MediaFile",
    "WireKind",
    "WireMessage",
    "enum_name",
    "event_name",
    "identity",
    "jid",
    "read_message",
]

WireKind = Literal["text", "media", "edit", "revoke", "reaction", "other", "unsupported", "system"]
_E2E = "WAWebProtobufsE2E."
_ENVELOPES = frozenset({f"{_E2E}FutureProofMessage", f"{_E2E}DeviceSentMessage"})
_COMPANIONS = frozenset(
    {"messageContextInfo", "senderKeyDistributionMessage", "fastRatchetKeySenderKeyDistributionMessage"}
)
# protobuf type -> (media kind, default media type, default file name)
_MEDIA: dict[str, tuple[str, str, str]] = {
    f"{_E2E}ImageMessage": ("image", "image/jpeg", "image.jpg"),
    f"{_E2E}VideoMessage": ("video", "video/mp4", "video.mp4"),
    f"{_E2E}AudioMessage": ("audio", "audio/ogg", "audio.ogg"),
    f"{_E2E}DocumentMessage": ("document", "application/octet-stream", "document"),
    f"{_E2E}StickerMessage": ("sticker", "image/webp", "sticker.webp"),
}
_DOWNLOAD_FIELDS = ("URL", "directPath", "mediaKey", "fileEncSHA256", "fileSHA256", "fileLength", "mimetype")
_QUOTE_CHARS = 1000
_MAX_ENVELOPES = 6


@dataclass(frozen=True, slots=True)
class Identity:
    """The linked account: its number's digits, its linked identity and the name it shows."""

    phone: str
    lid: str | None = None
    name: str | None = None

    def is_me(self, who: Jid | None) -> bool:
        """Whether ``who`` is this account (by number or by linked identity)."""
        if who is None:
            return False
        return (who.server == USER and who.user == self.phone) or (who.server == LID and who.user == self.lid)


@dataclass(frozen=True, slots=True)
class MediaFile:
    """A file a message carries; ``locator`` is what downloading it needs (its CDN path, hashes and media key:
    they name and decrypt this one file, nothing of the account's session)."""

    kind: str
    media_type: str
    name: str
    size: int | None
    locator: dict[str, Json]


@dataclass(frozen=True, slots=True)
class Context:
    """What a message says about other messages: the one it quotes, and who it mentions."""

    quoted_id: str | None = None
    quoted_sender: Jid | None = None
    quoted_text: str = ""
    mentioned: tuple[Jid, ...] = ()


@dataclass(frozen=True, slots=True)
class WireMessage:
    """One ``Message`` event, read. ``target_id``: the message an edit, revoke or reaction is about."""

    id: str
    chat: Jid
    sender: Jid
    sender_alt: Jid | None
    from_me: bool
    timestamp: float
    push_name: str
    kind: WireKind
    type_name: str
    text: str = ""
    media: MediaFile | None = None
    context: Context | None = None
    target_id: str | None = None

    @property
    def person(self) -> Jid:
        """The sender, by phone number when WhatsApp told it (a linked identity otherwise)."""
        if self.sender.server != USER and self.sender_alt is not None and self.sender_alt.server == USER:
            return self.sender_alt
        return self.sender


def event_name(event: Any) -> str:
    """The name of a neonize event's protobuf type without its package (``Message``, ``QR``, ``LoggedOut``)."""
    descriptor = getattr(type(event), "DESCRIPTOR", None)
    full_name = getattr(descriptor, "full_name", None)
    return str(full_name).removeprefix("neonize.") if isinstance(full_name, str) else type(event).__name__


def enum_name(message: Any, field: str) -> str:
    """The name of the enum value in ``message.<field>`` (``LOGGED_OUT``), or ``""`` when unset or unknown."""
    if not message.HasField(field):
        return ""
    value = message.DESCRIPTOR.fields_by_name[field].enum_type.values_by_number.get(getattr(message, field))
    return str(value.name) if value is not None else str(getattr(message, field))


def jid(proto: Any) -> Jid | None:
    """A ``neonize.JID`` as a ``Jid`` (device dropped); ``None`` when it is empty."""
    user, server = str(getattr(proto, "User", "") or ""), str(getattr(proto, "Server", "") or "")
    if not server or getattr(proto, "IsEmpty", False):
        return None
    return Jid(user, server)


def identity(device: Any) -> Identity | None:
    """Who a ``neonize.Device`` (``get_me``, ``PairStatus``) is; ``None`` before a device is paired."""
    own = jid(getattr(device, "JID", None))
    if own is None or own.server != USER or not own.user:
        return None
    lid = jid(getattr(device, "LID", None))
    name = str(getattr(device, "PushName", "") or getattr(device, "BussinessName", "") or "")
    return Identity(phone=own.user, lid=lid.user if lid is not None and lid.server == LID else None, name=name or None)


def read_message(event: Any) -> WireMessage:
    """Read a ``neonize.Message`` event; ``EventInvalid`` when it has no id, chat or sender."""
    info = event.Info
    source = info.MessageSource
    chat, sender = jid(source.Chat), jid(source.Sender)
    if not info.ID or chat is None or sender is None:
        raise EventInvalid(f"a WhatsApp message without an id, chat or sender (id {info.ID!r})")
    kind, type_name, text, media, context, target = _content(_unwrap(event.Message))
    return WireMessage(
        id=str(info.ID),
        chat=chat,
        sender=sender,
        sender_alt=jid(source.SenderAlt) if source.HasField("SenderAlt") else None,
        from_me=bool(source.IsFromMe),
        timestamp=_seconds(int(info.Timestamp)),
        push_name=str(info.Pushname or ""),
        kind=kind,
        type_name=type_name,
        text=text,
        media=media,
        context=context,
        target_id=target,
    )


def _seconds(stamp: int) -> float:
    # neonize sends milliseconds (whatsmeow's UnixMilli); an older core sent seconds. No date after 1973 is
    # below 1e11 ms, and no date before 5138 is above 1e11 s.
    return stamp / 1000.0 if stamp > 100_000_000_000 else float(stamp)


def _fields(message: Any) -> Iterator[tuple[str, str, Any]]:
    """(field name, protobuf type or '' for a scalar, value) of the content fields set on ``message``."""
    for descriptor, value in message.ListFields():
        if descriptor.name not in _COMPANIONS:
            kind = descriptor.message_type.full_name if descriptor.message_type is not None else ""
            yield descriptor.name, kind, value


def _unwrap(message: Any) -> Any:
    """The content inside WhatsApp's envelopes (a few levels at most: envelopes can nest)."""
    for _ in range(_MAX_ENVELOPES):
        fields = list(_fields(message))
        if len(fields) == 1 and fields[0][1] in _ENVELOPES and fields[0][2].HasField("message"):
            message = fields[0][2].message
        else:
            break
    return message


_Content = tuple[WireKind, str, str, MediaFile | None, Context | None, str | None]


def _content(message: Any) -> _Content:
    fields = list(_fields(message))
    if not fields:
        return "system", "", "", None, None, None
    name, kind, value = next(((n, k, v) for n, k, v in fields if n == "conversation" or k in _KNOWN), fields[0])
    if name == "conversation":
        return "text", name, str(value), None, None, None
    reader = _KNOWN.get(kind)
    if reader is None:
        return "unsupported", name, "", None, _context(value), None
    return reader(name, value)


def _text(name: str, value: Any) -> _Content:
    return "text", name, str(value.text), None, _context(value), None


def _media(name: str, value: Any) -> _Content:
    kind, media_type, default_name = _MEDIA[value.DESCRIPTOR.full_name]
    if kind == "audio" and getattr(value, "PTT", False):
        kind = "voice"
    file_name = str(getattr(value, "fileName", "") or getattr(value, "title", "") or default_name)
    locator: dict[str, Json] = {"kind": kind}
    for key in _DOWNLOAD_FIELDS:
        if value.HasField(key):
            field = getattr(value, key)
            locator[key] = base64.b64encode(field).decode("ascii") if isinstance(field, bytes) else field
    size = int(value.fileLength) if value.HasField("fileLength") else None
    media = MediaFile(kind, str(value.mimetype or media_type), file_name, size, locator)
    caption = str(getattr(value, "caption", "") or "")
    return "media", name, caption, media, _context(value), None


def _protocol(name: str, value: Any) -> _Content:
    kind = enum_name(value, "type")
    target = str(value.key.ID) if value.HasField("key") and value.key.ID else None
    if kind == "REVOKE" and target:
        return "revoke", name, "", None, None, target
    if kind == "MESSAGE_EDIT" and target and value.HasField("editedMessage"):
        _, _, text, _, context, _ = _content(_unwrap(value.editedMessage))
        return "edit", name, text, None, context, target
    return "system", name, "", None, None, None


def _reaction(name: str, value: Any) -> _Content:
    target = str(value.key.ID) if value.HasField("key") and value.key.ID else None
    if not target or not value.text:
        return "system", name, "", None, None, None  # a reaction taken back says nothing
    return "reaction", name, str(value.text), None, None, target


def _location(name: str, value: Any) -> _Content:
    place = ", ".join(str(part) for part in (getattr(value, "name", ""), getattr(value, "address", "")) if part)
    where = f"{value.degreesLatitude:.5f}, {value.degreesLongitude:.5f}"
    live = "live location" if name == "liveLocationMessage" else "location"
    return "other", name, f"[{live}: {place} ({where})]" if place else f"[{live}: {where}]", None, _context(value), None


def _contact(name: str, value: Any) -> _Content:
    card = f"[contact card: {value.displayName}]"
    return "other", name, f"{card}\n{value.vcard}" if value.vcard else card, None, _context(value), None


def _contacts(name: str, value: Any) -> _Content:
    names = ", ".join(str(contact.displayName) for contact in value.contacts) or str(value.displayName)
    return "other", name, f"[contact cards: {names}]", None, _context(value), None


def _poll(name: str, value: Any) -> _Content:
    options = " / ".join(str(option.optionName) for option in value.options)
    return "other", name, f"[poll: {value.name}: {options}]", None, _context(value), None


_KNOWN = {
    f"{_E2E}ExtendedTextMessage": _text,
    **dict.fromkeys(_MEDIA, _media),
    f"{_E2E}ProtocolMessage": _protocol,
    f"{_E2E}ReactionMessage": _reaction,
    f"{_E2E}LocationMessage": _location,
    f"{_E2E}LiveLocationMessage": _location,
    f"{_E2E}ContactMessage": _contact,
    f"{_E2E}ContactsArrayMessage": _contacts,
    f"{_E2E}PollCreationMessage": _poll,
}


def _context(value: Any) -> Context | None:
    """The quote and mentions of a content message (``contextInfo``), when it has any."""
    fields = getattr(getattr(value, "DESCRIPTOR", None), "fields_by_name", {})
    if "contextInfo" not in fields or not value.HasField("contextInfo"):
        return None
    info = value.contextInfo
    mentioned = tuple(found for found in (_jid_text(text) for text in info.mentionedJID) if found is not None)
    quoted_id = str(info.stanzaID) if info.stanzaID else None
    if quoted_id is None and not mentioned:
        return None
    quoted_text = _quoted_text(info.quotedMessage) if info.HasField("quotedMessage") else ""
    return Context(quoted_id, _jid_text(info.participant), quoted_text, mentioned)


def _jid_text(text: str) -> Jid | None:
    return parse_jid(str(text))


def _quoted_text(message: Any) -> str:
    kind, _, text, media, _, _ = _content(_unwrap(message))
    if not text and media is not None:
        text = f"[{media.kind}]"
    elif not text and kind == "unsupported":
        text = "[a message this channel cannot show]"
    return text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "…"
