"""The protobuf messages the linked device sends, built from plain values (neonize's own classes).

The client module sends what these build, as built: neonize's ``send_message`` is given a finished ``Message``,
so its conveniences stay out of the way (it would turn any ``@`` and digits in a reply into a mention, and build
thumbnails with ffmpeg and Pillow). A reply carries the quoted message's id, sender and text (``ContextInfo``:
WhatsApp shows the quote from that text). Media goes without a thumbnail: the phone shows a placeholder until
it downloads the file.

Importing this module imports neonize (and so loads its Go core): only the client module and tests do.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from ishiki_channel_whatsapp.web._neonize import e2e, neo
from ishiki_channel_whatsapp.web.client import OutgoingMedia, QuoteRef

__all__ = ["download_message", "jid_proto", "media_message", "text_message"]

_UPLOADED = {"URL": "url", "directPath": "DirectPath", "mediaKey": "MediaKey", "fileEncSHA256": "FileEncSHA256"}
_DOWNLOAD_TYPES: dict[str, tuple[str, Any]] = {
    "image": ("imageMessage", e2e.ImageMessage),
    "video": ("videoMessage", e2e.VideoMessage),
    "audio": ("audioMessage", e2e.AudioMessage),
    "voice": ("audioMessage", e2e.AudioMessage),
    "document": ("documentMessage", e2e.DocumentMessage),
    "sticker": ("stickerMessage", e2e.StickerMessage),
}
_BYTES_FIELDS = ("mediaKey", "fileEncSHA256", "fileSHA256")


def jid_proto(text: str) -> Any:
    """The ``neonize.JID`` of ``user@server``."""
    user, _, server = text.rpartition("@")
    return neo.JID(User=user, Server=server, Device=0, RawAgent=0, Integrator=0, IsEmpty=False)


def text_message(text: str, quote: QuoteRef | None = None) -> Any:
    """A text message; with ``quote``, a reply to it."""
    if quote is None:
        return e2e.Message(conversation=text)
    return e2e.Message(extendedTextMessage=e2e.ExtendedTextMessage(text=text, contextInfo=_quoting(quote)))


def media_message(media: OutgoingMedia, upload: Any, quote: QuoteRef | None = None) -> Any:
    """The message of a file uploaded as ``upload`` (a ``neonize.UploadResponse``)."""
    fields: dict[str, Any] = {key: getattr(upload, source) for key, source in _UPLOADED.items()}
    fields.update(fileSHA256=upload.FileSHA256, fileLength=upload.FileLength, mimetype=media.media_type)
    if quote is not None:
        fields["contextInfo"] = _quoting(quote)
    if media.kind == "audio":
        return e2e.Message(audioMessage=e2e.AudioMessage(**fields))
    if media.caption:
        fields["caption"] = media.caption
    if media.kind == "image":
        return e2e.Message(imageMessage=e2e.ImageMessage(**fields))
    if media.kind == "video":
        return e2e.Message(videoMessage=e2e.VideoMessage(**fields))
    name = media.name or "document"
    return e2e.Message(documentMessage=e2e.DocumentMessage(fileName=name, title=name, **fields))


def download_message(locator: Mapping[str, Any]) -> Any:
    """The media message a download needs, rebuilt from a ``wire.MediaFile.locator``; ``ValueError`` when the
    locator is not one."""
    kind = locator.get("kind")
    if kind not in _DOWNLOAD_TYPES or not isinstance(locator.get("directPath"), str):
        raise ValueError(f"not a WhatsApp media locator (kind {kind!r})")
    field, message_type = _DOWNLOAD_TYPES[str(kind)]
    fields: dict[str, Any] = {"directPath": locator["directPath"]}
    for key in ("URL", "mimetype"):
        if isinstance(locator.get(key), str):
            fields[key] = locator[key]
    if isinstance(locator.get("fileLength"), int):
        fields["fileLength"] = locator["fileLength"]
    try:
        for key in _BYTES_FIELDS:
            fields[key] = base64.b64decode(str(locator[key]), validate=True)
    except (KeyError, binascii.Error):
        raise ValueError(f"the WhatsApp media locator lacks a valid {key}") from None
    return e2e.Message(**{field: message_type(**fields)})


def _quoting(quote: QuoteRef) -> Any:
    return e2e.ContextInfo(
        stanzaID=quote.message_id, participant=quote.sender, quotedMessage=e2e.Message(conversation=quote.text)
    )
