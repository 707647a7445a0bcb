"""Test kit of the ``web`` backend: ``FakeWebClient`` (the ``WebClient`` seam, with nothing behind it) and builders
of neonize's own event objects, as the library hands them over.

    device = FakeWebClient(me=Identity("491511234567"))
    connection = WebConnection(host, settings, client_factory=device.factory, out=io.StringIO())
    async with anyio.create_task_group() as tg:
        await tg.start(connection.run)        # readiness: the device connected (``device`` sent Connected)
        device.emit(message_event(text("hi"), chat="491700000001@s.whatsapp.net"))
        (event,) = await host.wait_for_events(1)

The fake answers like the real client: every call while no ``run`` is live raises ``WhatsAppWebUnavailable``;
``emit`` hands an event to the connection as neonize's callback does (queued, never awaited). It records
what the connection did (``sent``, ``read``, ``typing``, ``pair_requests``), can hold events for the next
``run`` (``queue``) and can be told to fail (``fail_sends``, ``fail_downloads``). With ``connect_on_run``
(the default when ``me`` is given) each ``run`` emits ``Connected`` at once, as a device with a stored session
does. Importing this module imports neonize (its protobuf classes, and so its Go core).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from ishiki_host import Json

from ishiki_channel_whatsapp.web._neonize import common, e2e, neo
from ishiki_channel_whatsapp.web.client import ClientOptions, EventSink, OutgoingMedia, QuoteRef
from ishiki_channel_whatsapp.web.errors import WhatsAppWebError, WhatsAppWebUnavailable
from ishiki_channel_whatsapp.web.wire import Identity

__all__ = [
    "FakeWebClient",
    "Sent",
    "connect_failure",
    "connected",
    "disconnected",
    "document",
    "edit",
    "image",
    "jid",
    "logged_out",
    "message_event",
    "pair_error",
    "pair_success",
    "qr_event",
    "revoke",
    "text",
]


@dataclass(frozen=True, slots=True)
class Sent:
    """One message the connection sent: ``text`` or ``media``, to ``chat``, quoting ``quote``; its ``id``."""

    id: str
    chat: str
    text: str | None = None
    media: OutgoingMedia | None = None
    quote: QuoteRef | None = None


class FakeWebClient:
    """A ``WebClient`` stand-in (see the module docstring). ``factory`` is a ``ClientFactory`` giving this one."""

    def __init__(self, *, me: Identity | None = None, connect_on_run: bool | None = None, pair_code: str = "ABCD-EFGH"):
        self.me_identity = me
        self.connect_on_run = me is not None if connect_on_run is None else connect_on_run
        self.pair_code = pair_code
        self.files: dict[str, bytes] = {}
        self.contacts: dict[str, str] = {}
        self.fail_sends: collections.deque[WhatsAppWebError] = collections.deque()
        self.fail_downloads: collections.deque[WhatsAppWebError] = collections.deque()
        self.sent: list[Sent] = []
        self.read: list[tuple[str, str, tuple[str, ...]]] = []
        self.typing: list[str] = []
        self.pair_requests: list[str] = []
        self.options: list[ClientOptions] = []
        self.online = 0
        self.runs = 0
        self.stops = 0
        self._sink: EventSink | None = None
        self._ended: anyio.Event | None = None
        self._end_error: WhatsAppWebError | None = None
        self._changed = anyio.Event()
        self._ids = 0
        self._queued: list[Any] = []

    def factory(self, options: ClientOptions) -> FakeWebClient:
        """The ``ClientFactory``: every life gets this client."""
        self.options.append(options)
        return self

    @property
    def live(self) -> bool:
        """Whether a ``run`` is going on."""
        return self._sink is not None

    async def wait_runs(self, count: int, *, deadline: float = 5.0) -> None:
        """Return once ``run`` was called ``count`` times and one is live."""
        await self.until(lambda: self.runs >= count and self.live, deadline=deadline)

    async def until(self, predicate: Callable[[], bool], *, deadline: float = 5.0) -> None:
        """Return once ``predicate()`` holds; it is checked after every call the connection makes."""
        with anyio.fail_after(deadline):
            while not predicate():
                await self._changed.wait()

    def emit(self, *events: Any) -> None:
        """Hand ``events`` to the live ``run``'s sink, as neonize's callback does."""
        if self._sink is None:
            raise RuntimeError("no run is live: nothing takes events")
        for event in events:
            self._sink(event)

    def queue(self, *events: Any) -> None:
        """Emit ``events`` as soon as the next ``run`` starts (after its ``Connected``, if it sends one)."""
        self._queued.extend(events)

    def end(self, error: WhatsAppWebError | None = None) -> None:
        """Make the live ``run`` return (or raise ``error``), as when the library's connection ended."""
        self._end_error = error
        if self._ended is not None:
            self._ended.set()

    # -- WebClient ---------------------------------------------------------------------------------------------

    async def run(self, sink: EventSink) -> None:
        """Take events until ``end`` or ``stop``."""
        self.runs += 1
        self._sink, self._ended, self._end_error = sink, anyio.Event(), None
        self._notify()
        try:
            if self.connect_on_run:
                sink(connected())
            queued, self._queued = self._queued, []
            for event in queued:
                sink(event)
            await self._ended.wait()
            if self._end_error is not None:
                raise self._end_error
        finally:
            self._sink = None
            self._notify()

    async def stop(self) -> None:
        """End the live ``run``."""
        self.stops += 1
        self.end()

    async def pair_phone(self, phone: str) -> str:
        """Record the request; ``pair_code``."""
        self._check("pairing")
        self.pair_requests.append(phone)
        self._notify()
        return self.pair_code

    async def me(self) -> Identity | None:
        """``me_identity``."""
        self._check("get_me")
        return self.me_identity

    async def send_text(self, chat: str, text: str, quote: QuoteRef | None = None) -> str:
        """Record a text; its new id."""
        return self._send(Sent(self._next_id(), chat, text=text, quote=quote))

    async def send_media(self, chat: str, media: OutgoingMedia, quote: QuoteRef | None = None) -> str:
        """Record a file; its new id."""
        return self._send(Sent(self._next_id(), chat, media=media, quote=quote))

    async def download(self, locator: Mapping[str, Json]) -> bytes:
        """The bytes in ``files`` under the locator's ``directPath``."""
        self._check("download")
        if self.fail_downloads:
            raise self.fail_downloads.popleft()
        path = locator.get("directPath")
        if not isinstance(path, str) or path not in self.files:
            raise WhatsAppWebError(f"WhatsApp download failed: no file at {path!r}", what="download", details="404")
        return self.files[path]

    async def mark_read(self, chat: str, sender: str, message_ids: Sequence[str]) -> None:
        """Record the receipt."""
        self._check("mark_read")
        self.read.append((chat, sender, tuple(message_ids)))
        self._notify()

    async def send_typing(self, chat: str) -> None:
        """Record the typing indicator."""
        self._check("typing")
        self.typing.append(chat)
        self._notify()

    async def set_online(self) -> None:
        """Count it."""
        self._check("presence")
        self.online += 1
        self._notify()

    async def contact_name(self, who: str) -> str | None:
        """``contacts[who]``."""
        self._check("contact")
        return self.contacts.get(who)

    def _send(self, sent: Sent) -> str:
        self._check("send")
        if self.fail_sends:
            raise self.fail_sends.popleft()
        self.sent.append(sent)
        self._notify()
        return sent.id

    def _check(self, what: str) -> None:
        if self._sink is None:
            raise WhatsAppWebUnavailable("the WhatsApp linked device is not connected", what=what)

    def _next_id(self) -> str:
        self._ids += 1
        return f"3EB0{self._ids:016X}"

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()


# -- neonize's events, built as its Go core hands them over ---------------------------------------------------


def jid(text: str) -> Any:
    """``neonize.JID`` of ``user[:device]@server``."""
    user, _, server = text.rpartition("@")
    user, _, device = user.partition(":")
    return neo.JID(User=user, Server=server, Device=int(device or 0), RawAgent=0, Integrator=0, IsEmpty=False)


def text(body: str, *, mentions: Sequence[str] = (), quote: tuple[str, str, str] | None = None) -> Any:
    """A text ``WAWebProtobufsE2E.Message``: plain, or extended with ``mentions`` (JIDs) and a ``quote``
    (id, sender JID, quoted text), as WhatsApp's apps send them."""
    if not mentions and quote is None:
        return e2e.Message(conversation=body)
    context = e2e.ContextInfo(mentionedJID=list(mentions))
    if quote is not None:
        context.stanzaID, context.participant = quote[0], quote[1]
        context.quotedMessage.CopyFrom(e2e.Message(conversation=quote[2]))
    return e2e.Message(extendedTextMessage=e2e.ExtendedTextMessage(text=body, contextInfo=context))


def image(
    *, caption: str = "", size: int = 1234, path: str = "/v/t62.7118-24/image", mimetype: str = "image/jpeg"
) -> Any:
    """An image message as received (download coordinates made up; ``path`` is its direct path)."""
    return e2e.Message(
        imageMessage=e2e.ImageMessage(
            URL=f"https://mmg.whatsapp.net{path}",
            directPath=path,
            mimetype=mimetype,
            caption=caption,
            fileLength=size,
            mediaKey=b"k" * 32,
            fileSHA256=b"s" * 32,
            fileEncSHA256=b"e" * 32,
            JPEGThumbnail=b"\xff\xd8thumb",
        )
    )


def document(*, name: str = "report.pdf", size: int = 4321, path: str = "/v/t62.7119-24/doc", caption: str = "") -> Any:
    """A document message as received."""
    return e2e.Message(
        documentMessage=e2e.DocumentMessage(
            directPath=path,
            mimetype="application/pdf",
            fileName=name,
            title=name,
            caption=caption,
            fileLength=size,
            mediaKey=b"k" * 32,
            fileSHA256=b"s" * 32,
            fileEncSHA256=b"e" * 32,
        )
    )


def message_event(
    content: Any,
    *,
    chat: str,
    sender: str | None = None,
    sender_alt: str | None = None,
    message_id: str = "3A1B2C3D4E5F60718293",
    from_me: bool = False,
    push_name: str = "Ada",
    timestamp_ms: int = 1_700_000_000_000,
) -> Any:
    """A ``neonize.Message`` event: ``content`` (a ``WAWebProtobufsE2E.Message``) in ``chat`` from ``sender``
    (default: the chat, as in a direct chat)."""
    is_group = chat.endswith("@g.us")
    source = neo.MessageSource(Chat=jid(chat), Sender=jid(sender or chat), IsFromMe=from_me, IsGroup=is_group)
    if sender_alt is not None:
        source.SenderAlt.CopyFrom(jid(sender_alt))
    info = neo.MessageInfo(
        MessageSource=source, ID=message_id, Type="text", Pushname=push_name, Timestamp=timestamp_ms, Category=""
    )
    return neo.Message(Info=info, Message=content, Raw=content)


def revoke(target_id: str) -> Any:
    """The content of "delete for everyone" of the message ``target_id``."""
    protocol = e2e.ProtocolMessage(key=common.MessageKey(ID=target_id), type=e2e.ProtocolMessage.REVOKE)
    return e2e.Message(protocolMessage=protocol)


def edit(target_id: str, body: str) -> Any:
    """The content of an edit of ``target_id`` to ``body``, in its ``editedMessage`` envelope."""
    protocol = e2e.ProtocolMessage(
        key=common.MessageKey(ID=target_id),
        type=e2e.ProtocolMessage.MESSAGE_EDIT,
        editedMessage=e2e.Message(conversation=body),
    )
    return e2e.Message(editedMessage=e2e.FutureProofMessage(message=e2e.Message(protocolMessage=protocol)))


def qr_event(code: str = "2@qr-code-data,keys,more-keys,adv") -> Any:
    """A ``neonize.QR`` event (one code, as the client module builds it from neonize's QR callback)."""
    return neo.QR(Codes=[code])


def pair_success(phone: str) -> Any:
    """A successful ``neonize.PairStatus``."""
    return neo.PairStatus(ID=jid(f"{phone}:12@s.whatsapp.net"), Status=neo.PairStatus.SUCCESS, Platform="android")


def pair_error(error: str = "the code expired") -> Any:
    """A failed ``neonize.PairStatus``."""
    return neo.PairStatus(Status=neo.PairStatus.ERROR, Error=error)


def connected() -> Any:
    """``neonize.Connected``."""
    return neo.Connected(status=True)


def disconnected() -> Any:
    """``neonize.Disconnected``."""
    return neo.Disconnected(status=True)


def logged_out(reason: str = "LOGGED_OUT", *, on_connect: bool = False) -> Any:
    """``neonize.LoggedOut`` (the device was unlinked)."""
    return neo.LoggedOut(OnConnect=on_connect, Reason=neo.ConnectFailureReason.Value(reason))


def connect_failure(reason: str = "SERVICE_UNAVAILABLE", message: str = "") -> Any:
    """``neonize.ConnectFailure``."""
    return neo.ConnectFailure(Reason=neo.ConnectFailureReason.Value(reason), Message=message)
