"""Sending through the linked device: text split and rendered, replies that quote, files, typing.

A text is rendered from Markdown to WhatsApp's marks and cut into parts of 4,096 characters, marks included
(``formatting.render_parts``; WhatsApp takes far longer texts, but folds them behind "Read more" past a few
thousand characters); the first part replies to
``reply_to`` when that message is a recent one (a reply must carry the quoted message's sender and text, which
only the recent inbound messages tell; an older one is answered without the quote). Files go as image (JPEG,
PNG), video (MP4), audio (``audio/*``; its caption follows as a text) or document (anything else, or an image
over 16 MiB). Nothing is retried: whatsmeow retries its own transport, and a send that failed after leaving may
still have arrived, so a retry could show a message twice. A failure ends the send with ``SendResult.error``
naming the part, with the ids of the parts that did go out.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from ishiki_host import SendResult
from ishiki_host.errors import EventInvalid

from ishiki_channel_whatsapp.formatting import render_parts, render_whatsapp
from ishiki_channel_whatsapp.web.client import MediaKind, OutgoingMedia
from ishiki_channel_whatsapp.web.errors import WhatsAppWebError
from ishiki_channel_whatsapp.web.jids import chat_jid

if TYPE_CHECKING:
    from ishiki_host import OutboundFile

    from ishiki_channel_whatsapp.web.client import QuoteRef, WebClient
    from ishiki_channel_whatsapp.web.recent import Recent

__all__ = ["MESSAGE_LIMIT", "Sender", "media_kind"]

MESSAGE_LIMIT = 4096
_IMAGE_LIMIT = 16 * 1024 * 1024
_IMAGES = frozenset({"image/jpeg", "image/png"})


def media_kind(media_type: str, size: int) -> MediaKind:
    """How WhatsApp shows a file of ``media_type`` and ``size`` bytes."""
    if media_type in _IMAGES and size <= _IMAGE_LIMIT:
        return "image"
    if media_type == "video/mp4":
        return "video"
    if media_type.startswith("audio/"):
        return "audio"
    return "document"


class Sender:
    """The outbound half of a connection. ``client()`` is the device now (``None`` when not connected);
    ``on_sent(id)`` is told of every message sent."""

    def __init__(
        self,
        client: Callable[[], WebClient | None],
        quotes: Recent[QuoteRef],
        *,
        on_sent: Callable[[str], None],
        logger: logging.Logger,
        not_connected: Callable[[], str],
    ):
        self._client = client
        self._quotes = quotes
        self._on_sent = on_sent
        self._log = logger
        self._not_connected = not_connected

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Send ``text`` as one or more messages (see the module docstring)."""
        try:
            chat = str(chat_jid(channel_id))
        except EventInvalid as exc:
            return SendResult(error=str(exc))
        parts = render_parts(text, MESSAGE_LIMIT)
        quote = self._quotes.get(reply_to)
        ids: list[str] = []
        for index, part in enumerate(parts):
            error = await self._text(ids, chat, part, quote if index == 0 else None)
            if error is not None:
                return SendResult(tuple(ids), error=_part(error, index, len(parts)))
        return SendResult(tuple(ids))

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Send each file in order (see the module docstring)."""
        try:
            chat = str(chat_jid(channel_id))
        except EventInvalid as exc:
            return SendResult(error=str(exc))
        ids: list[str] = []
        for index, file in enumerate(files):
            blob = file.blob
            kind = media_kind(blob.media_type, len(blob.data))
            caption = render_whatsapp(file.caption) if file.caption and kind != "audio" else None
            media = OutgoingMedia(kind, blob.data, blob.media_type, blob.name, caption)
            error = await self._media(ids, chat, media)
            if error is None and kind == "audio" and file.caption:
                error = await self._text(ids, chat, render_whatsapp(file.caption))
            if error is not None:
                return SendResult(tuple(ids), error=f"file {index + 1} of {len(files)} ({blob.name or kind}): {error}")
        return SendResult(tuple(ids))

    async def send_typing(self, channel_id: str) -> None:
        """Show "typing..." (a failure is logged at debug level: it is a courtesy)."""
        client = self._client()
        if client is None:
            return
        try:
            await client.send_typing(str(chat_jid(channel_id)))
        except (WhatsAppWebError, EventInvalid) as exc:
            self._log.debug("whatsapp: no typing indicator in %s: %s", channel_id, exc)

    async def _text(self, ids: list[str], chat: str, text: str, quote: QuoteRef | None = None) -> str | None:
        client = self._client()
        if client is None:
            return self._not_connected()
        return await self._sent(ids, client.send_text(chat, text, quote))

    async def _media(self, ids: list[str], chat: str, media: OutgoingMedia) -> str | None:
        client = self._client()
        if client is None:
            return self._not_connected()
        return await self._sent(ids, client.send_media(chat, media))

    async def _sent(self, ids: list[str], sending: Awaitable[str]) -> str | None:
        """Await one send; its id goes to ``ids``; the error, if any."""
        try:
            sent = await sending
        except WhatsAppWebError as exc:
            return str(exc)
        ids.append(sent)
        self._on_sent(sent)
        return None


def _part(error: str, index: int, count: int) -> str:
    return error if count == 1 else f"part {index + 1} of {count}: {error}"
