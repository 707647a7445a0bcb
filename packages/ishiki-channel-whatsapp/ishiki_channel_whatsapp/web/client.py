"""``WebClient``: the seam between the linked-device connection and the library that speaks WhatsApp's protocol.

Everything network-bound goes through these few calls; the real one is ``NeonizeClient``
(``ishiki_channel_whatsapp.web.neonize_client``), the stand-in for tests is ``FakeWebClient``
(``ishiki_channel_whatsapp.web.testing``). Inbound, ``run`` hands the library's own event objects (neonize's
protobuf messages: ``Message``, ``QR``, ``Connected``, ``LoggedOut``...) to a sink, in the order they came; the
connection reads them with ``ishiki_channel_whatsapp.web.wire``. Outbound, calls take plain values (chat JIDs
as text) and return the ids WhatsApp gave.

Every failure is a ``WhatsAppWebError`` (``ishiki_channel_whatsapp.web.errors``); a call made while the device is
not connected raises ``WhatsAppWebUnavailable`` and never reaches the library.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from ishiki_host import Json

from ishiki_channel_whatsapp.web.wire import Identity

__all__ = ["ClientFactory", "ClientOptions", "EventSink", "MediaKind", "OutgoingMedia", "QuoteRef", "WebClient"]

EventSink = Callable[[Any], None]
"""Takes one library event; never blocks (the connection queues it)."""

MediaKind = Literal["image", "video", "audio", "document"]


@dataclass(frozen=True, slots=True)
class QuoteRef:
    """The message a send replies to: its id, its sender's JID and the text the quote shows."""

    message_id: str
    sender: str
    text: str = ""


@dataclass(frozen=True, slots=True)
class OutgoingMedia:
    """A file to send: ``kind`` says how WhatsApp shows it; ``caption`` goes under it (not for audio)."""

    kind: MediaKind
    data: bytes
    media_type: str
    name: str | None = None
    caption: str | None = None


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """What a client is made with: where its session lives, the name the phone lists, its logger, and the proxy
    its connections go through (``None``: direct)."""

    session: Path
    device_name: str
    logger: logging.Logger
    proxy: str | None = None


class WebClient(Protocol):
    """One linked device's connection to WhatsApp (see the module docstring)."""

    async def run(self, sink: EventSink) -> None:
        """Connect (pairing first when there is no session) and hand every event to ``sink`` until ``stop`` or
        cancellation; returns when the library's connection ended, raises ``WhatsAppWebError`` if it failed."""
        ...

    async def stop(self) -> None:
        """End ``run`` (disconnect); the session stays."""
        ...

    async def pair_phone(self, phone: str) -> str:
        """Ask for a pairing code for ``phone`` (digits); call it once the first ``QR`` event came."""
        ...

    async def me(self) -> Identity | None:
        """Who the device is linked to (``None`` before pairing finished)."""
        ...

    async def send_text(self, chat: str, text: str, quote: QuoteRef | None = None) -> str:
        """Send ``text`` to the JID ``chat``; the id WhatsApp gave the message."""
        ...

    async def send_media(self, chat: str, media: OutgoingMedia, quote: QuoteRef | None = None) -> str:
        """Upload ``media`` and send it to ``chat``; the message's id."""
        ...

    async def download(self, locator: Mapping[str, Json]) -> bytes:
        """The bytes of an inbound file (``wire.MediaFile.locator``), decrypted."""
        ...

    async def mark_read(self, chat: str, sender: str, message_ids: Sequence[str]) -> None:
        """Send read receipts for messages of ``sender`` in ``chat``."""
        ...

    async def send_typing(self, chat: str) -> None:
        """Show "typing..." in ``chat`` (WhatsApp clears it after about 25 s, or when a message arrives)."""
        ...

    async def set_online(self) -> None:
        """Mark the device online (chat states such as typing are shown only from an online device)."""
        ...

    async def contact_name(self, who: str) -> str | None:
        """The name the account's address book gives the JID ``who``, if any."""
        ...


ClientFactory = Callable[[ClientOptions], WebClient]
"""Makes the client of one connection's life (the connection makes a new one after each restart)."""
