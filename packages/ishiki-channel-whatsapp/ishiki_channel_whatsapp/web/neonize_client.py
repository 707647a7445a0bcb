"""``NeonizeClient``: the ``WebClient`` on neonize's asyncio client (``neonize.aioze``), the one module that drives
WhatsApp. It is kept thin on purpose: everything it sends is built by ``protos``, everything it receives is read
by ``wire``, and both are tested with neonize's real classes; this module only passes them through.

How neonize (0.5.x) runs: its core is whatsmeow, compiled from Go into a shared library that is loaded when
neonize is first imported (Go's runtime starts its own threads then). ``connect()`` runs the blocking Go call
``Neonize()`` in a worker thread of the running loop's default executor (``asyncio.to_thread``) inside an asyncio
task, and every other call (send, upload, download, receipts) is one blocking FFI call in ``asyncio.to_thread``.
Go calls back on its own threads; neonize hands each event to the loop it captured at the first ``connect()``
(``asyncio.run_coroutine_threadsafe``), where the handlers here only put it into the connection's queue, in
order. So there is no second event loop: it runs on the host's loop, asyncio or uvloop (not trio), one loop per
process (neonize keeps the loop in a module global).

Safety: the Go side dereferences its client by id, so a call before Go registered the client, or after it was
stopped, would crash the process; calls are let through only between the first event and the end of ``run``.
The session database (whatsmeow's SQLite store) is ``ClientOptions.session``; whatsmeow opens it as a
``file:`` URI, so its path may hold no ``?`` or ``#``. neonize is imported through ``_neonize`` (which undoes
what its import does to logging), and this module is imported only when a real device runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar
from uuid import uuid4

from ishiki_host import Json

from ishiki_channel_whatsapp.web import _neonize, protos, wire
from ishiki_channel_whatsapp.web.client import ClientOptions, EventSink, OutgoingMedia, QuoteRef
from ishiki_channel_whatsapp.web.errors import WhatsAppWebError, WhatsAppWebRefused, WhatsAppWebUnavailable

__all__ = ["NeonizeClient", "make_neonize_client"]

T = TypeVar("T")

_EVENTS = (
    "PairStatus",
    "Connected",
    "Disconnected",
    "KeepAliveTimeout",
    "KeepAliveRestored",
    "LoggedOut",
    "StreamReplaced",
    "TemporaryBan",
    "ConnectFailure",
    "ClientOutdated",
    "StreamError",
    "Message",
    "UndecryptableMessage",
    "OfflineSyncCompleted",
)
_MEDIA_TYPES = {"image": "MediaImage", "video": "MediaVideo", "audio": "MediaAudio", "document": "MediaDocument"}


class NeonizeClient:
    """The ``WebClient`` of one connection's life (see the module docstring)."""

    def __init__(self, options: ClientOptions):
        if any(char in str(options.session) for char in "?#"):
            raise WhatsAppWebRefused(
                f"the WhatsApp session path {options.session} holds '?' or '#', which its database cannot open; "
                "give the account an id of letters and digits",
                what="connect",
            )
        self._options = options
        self._client: Any = None
        self._live = False

    async def run(self, sink: EventSink) -> None:
        """Connect with neonize and hand its events to ``sink`` until stopped or cancelled."""
        self._options.session.parent.mkdir(parents=True, exist_ok=True)
        props = _neonize.DeviceProps(os=self._options.device_name, platformType=_neonize.DeviceProps.DESKTOP)
        # A uuid of its own per client: neonize's finalizer of a client stops the Go client of its uuid whenever the
        # garbage collector gets to it, which must never be the next life's client on the same session.
        uuid = f"ishiki-{uuid4().hex}"
        client = _neonize.aioze.NewAClient(str(self._options.session), props=props, uuid=uuid)

        async def on_event(_: Any, event: Any) -> None:
            self._live = True
            sink(event)

        async def on_qr(_: Any, code: bytes) -> None:
            self._live = True
            sink(_neonize.neo.QR(Codes=[code.decode("utf-8", "replace")]))

        for name in _EVENTS:
            client.event(getattr(_neonize.neo, name))(on_event)
        client.event.qr(on_qr)
        proxy = _neonize.aioze.ProxySettings(proxy_address=self._options.proxy) if self._options.proxy else None
        self._client = client
        try:
            connection = await client.connect(proxy)
            await connection  # cancelling this cancels neonize's task, which tells Go to stop
        except _neonize.NeonizeError as exc:
            raise WhatsAppWebUnavailable(f"the WhatsApp client ended: {exc}", what="connect") from None
        finally:
            self._live = False
            self._client = None

    async def stop(self) -> None:
        """Disconnect; ``run`` returns once Go let go."""
        client, self._live = self._client, False
        if client is not None:
            await client.stop()

    async def pair_phone(self, phone: str) -> str:
        """The pairing code for ``phone`` (shown on the phone as Chrome on Linux)."""
        linux, chrome = _neonize.enum.ClientName.LINUX, _neonize.enum.ClientType.CHROME
        code: str = await self._call("pairing", lambda c: c.PairPhone(phone, True, linux, chrome))
        return code

    async def me(self) -> wire.Identity | None:
        """Who the session is linked to."""
        return wire.identity(await self._call("get_me", lambda c: c.get_me()))

    async def send_text(self, chat: str, text: str, quote: QuoteRef | None = None) -> str:
        """Send a text (a reply when ``quote`` is given)."""
        message = protos.text_message(text, quote)
        response = await self._call("send", lambda c: c.send_message(protos.jid_proto(chat), message))
        return str(response.ID)

    async def send_media(self, chat: str, media: OutgoingMedia, quote: QuoteRef | None = None) -> str:
        """Upload a file, then send it."""
        kind = getattr(_neonize.enum.MediaType, _MEDIA_TYPES[media.kind])
        upload = await self._call("upload", lambda c: c.upload(media.data, kind))
        message = protos.media_message(media, upload, quote)
        response = await self._call("send", lambda c: c.send_message(protos.jid_proto(chat), message))
        return str(response.ID)

    async def download(self, locator: Mapping[str, Json]) -> bytes:
        """Download and decrypt one inbound file."""
        try:
            message = protos.download_message(locator)
        except ValueError as exc:
            raise WhatsAppWebError(str(exc), what="download") from None
        data: bytes = await self._call("download", lambda c: c.download_any(message))
        return data

    async def mark_read(self, chat: str, sender: str, message_ids: Sequence[str]) -> None:
        """Read receipts for ``message_ids``."""
        where, who, read = protos.jid_proto(chat), protos.jid_proto(sender), _neonize.enum.ReceiptType.READ
        await self._call("mark_read", lambda c: c.mark_read(*message_ids, chat=where, sender=who, receipt=read))

    async def send_typing(self, chat: str) -> None:
        """Show "typing..." in ``chat``."""
        composing = _neonize.enum.ChatPresence.CHAT_PRESENCE_COMPOSING
        text = _neonize.enum.ChatPresenceMedia.CHAT_PRESENCE_MEDIA_TEXT
        await self._call("typing", lambda c: c.send_chat_presence(protos.jid_proto(chat), composing, text))

    async def set_online(self) -> None:
        """Presence "available"."""
        await self._call("presence", lambda c: c.send_presence(_neonize.enum.Presence.AVAILABLE))

    async def contact_name(self, who: str) -> str | None:
        """The address book's name of ``who``; ``None`` when the store has none (or cannot say)."""
        try:
            info = await self._call("contact", lambda c: c.contact.get_contact(protos.jid_proto(who)))
        except WhatsAppWebError:
            return None
        name = str(info.FullName or info.FirstName or "")
        return name or None

    async def _call(self, what: str, call: Callable[[Any], Awaitable[T]]) -> T:
        """One library call, made only while Go holds the client; neonize's errors wrapped."""
        client = self._client
        if client is None or not self._live:
            raise WhatsAppWebUnavailable("the WhatsApp linked device is not connected", what=what)
        try:
            return await call(client)
        except _neonize.NeonizeError as exc:
            raise WhatsAppWebError(f"WhatsApp {what} failed: {exc}", what=what, details=str(exc)) from None


def make_neonize_client(options: ClientOptions) -> NeonizeClient:
    """The ``ClientFactory`` of real connections."""
    return NeonizeClient(options)
