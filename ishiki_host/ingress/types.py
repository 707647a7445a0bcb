"""What a plugin sees of the host's HTTP ingress: a request, a response, a handler and the mount it serves on.

A plugin never imports the server. It asks its host for a mount (a channel: ``ChannelHost.http_mount()``), a
path prefix of its own such as ``/hooks/whatsapp/0``, and adds routes below it. A handler is an
``async def (HttpRequest) -> HttpResponse | HttpStream``. The body has already been read in full, within the
route's size cap, so a signature can be checked over the raw bytes before anything is parsed. The whole request
(reading the body and the handler) runs under the route's deadline. An ``HttpStream`` (server-sent events made
with ``sse_event``, or any chunks) is sent after that, as its chunks come, outside the deadline: an idle stream
sends its keep-alive chunk instead, and the host ending (a stop) or the client leaving closes its iterator.

What the host answers without asking the handler:

- 404 for a path no route of the mount serves;
- 405 (with ``Allow``) for a method the route does not take;
- 413 for a body over the cap, whether it declares its length or not;
- 503 when the deadline passed (the platform retries later: a webhook never stalls the host);
- 500 when the handler raised (logged with its traceback; the response says nothing of it).

WebSockets: a platform that connects to the bot and keeps the link open (a OneBot implementation's reverse
WebSocket) is served by a WebSocket route, ``mount.websocket(path, handler)``. Its handler gets an
``HttpWebSocket`` before the handshake is answered: it reads the headers (a token), then ``accept``s or
``refuse``s (an HTTP status such as 401, sent instead of the upgrade), and talks over the link for as long as
it runs; when it returns, the host closes the link. No deadline applies and no body cap (the server's frame
cap does: 16 MiB). Leaving the mount closes the links still open (1001, going away), as the host stopping does.
A WebSocket to a path no WebSocket route serves is refused with 404.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol

__all__ = [
    "HttpHandler",
    "HttpMount",
    "HttpRequest",
    "HttpResponse",
    "HttpStream",
    "HttpWebSocket",
    "WebSocketHandler",
    "sse_event",
]

KEEP_ALIVE_COMMENT = ": keep-alive\n\n"
"""An SSE comment line: event sources ignore it, and the bytes keep proxies from closing an idle stream."""

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One request to a route. ``path`` is the part below the mount's prefix (``/update``; ``/`` for the prefix
    itself). Header names are lower case; ``query`` keeps the first value of each parameter and
    ``query_items`` all of them in order. ``client`` is ``host:port`` of the peer (the reverse proxy's, behind
    one)."""

    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)
    query_items: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    client: str | None = None


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """What a handler answers. A ``str`` body is sent as UTF-8."""

    status: int = 200
    body: bytes | str = b""
    media_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HttpStream:
    """A response whose body is sent as ``chunks`` yields it (``str`` as UTF-8), chunked, until they run out.

    The status and headers go out first, once the handler returned. The route's deadline is over by then; the
    stream has none of its own, as a live view may stay open for hours. Instead, after ``keep_alive_seconds``
    without a chunk (``None``: never), ``keep_alive_chunk`` is sent, so the proxies between notice a client
    that left and do not close a quiet stream. The host closes the iterator (``aclose()``: an async
    generator's ``finally`` runs) when the chunks run out, when the iterator raises (logged; the body ends
    there), when the client leaves, and when the host stops (the body ends properly, within its grace).
    ``HttpStream.sse`` makes a stream of server-sent events.
    """

    chunks: AsyncIterable[bytes | str]
    status: int = 200
    media_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)
    keep_alive_seconds: float | None = None
    keep_alive_chunk: bytes | str = KEEP_ALIVE_COMMENT

    def __post_init__(self) -> None:
        if self.keep_alive_seconds is not None and self.keep_alive_seconds <= 0:
            raise ValueError("HttpStream: keep_alive_seconds must be above 0 (or None for no keep-alive)")

    @classmethod
    def sse(
        cls,
        events: AsyncIterable[str],
        *,
        keep_alive_seconds: float | None = 15.0,
        headers: Mapping[str, str] | None = None,
    ) -> HttpStream:
        """Server-sent events: ``events`` yields what ``sse_event`` formats. The media type is
        ``text/event-stream``; ``Cache-Control: no-cache`` and ``X-Accel-Buffering: no`` keep caches and nginx
        from holding events back; a ``: keep-alive`` comment goes out every ``keep_alive_seconds`` of quiet.
        ``headers`` are added (and win)."""
        sent = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})}
        return cls(events, 200, "text/event-stream", sent, keep_alive_seconds)


def sse_event(data: str, event: str | None = None, id: str | None = None, retry: int | None = None) -> str:
    """One server-sent event as the HTML spec's ``text/event-stream`` has it: ``event:``, ``id:`` and
    ``retry:`` (milliseconds before the browser reconnects) when given, a ``data:`` line for each line of
    ``data`` (so the browser joins them back with ``\\n``), and the blank line that ends the event.
    ``ValueError`` for an ``event`` or ``id`` with a line break, an ``id`` with NUL, or a negative ``retry``."""
    if event is not None and _LINE_BREAK.search(event):
        raise ValueError(f"sse_event: the event name {event!r} holds a line break")
    if id is not None and (_LINE_BREAK.search(id) or "\x00" in id):
        raise ValueError(f"sse_event: the id {id!r} holds a line break or NUL")
    if retry is not None and retry < 0:
        raise ValueError(f"sse_event: retry is milliseconds, 0 or more (not {retry})")
    fields = [("event", event), ("id", id), ("retry", None if retry is None else str(retry))]
    lines = [f"{name}: {value}" for name, value in fields if value is not None]
    lines += [f"data: {line}" for line in _LINE_BREAK.split(data)]
    return "\n".join(lines) + "\n\n"


HttpHandler = Callable[[HttpRequest], Awaitable[HttpResponse | HttpStream]]
"""A route's handler: a whole response, or a stream."""


class HttpWebSocket(Protocol):
    """One WebSocket a client opened on a WebSocket route (see the module docstring).

    ``path``, ``headers``, ``query`` and ``client`` are those of the upgrade request, as ``HttpRequest`` has
    them. The handler answers the handshake once: ``accept`` or ``refuse``. After ``accept``, ``receive`` gives
    each message as it comes (``str`` for a text frame, ``bytes`` for a binary one) and ``None`` once the link
    is closed, by either side; ``send`` raises ``ConnectionError`` once it is closed.
    """

    @property
    def path(self) -> str:
        """The path below the mount's prefix (``/`` for the prefix itself)."""
        ...

    @property
    def headers(self) -> Mapping[str, str]:
        """The upgrade request's headers, names in lower case."""
        ...

    @property
    def query(self) -> Mapping[str, str]:
        """The first value of each query parameter."""
        ...

    @property
    def client(self) -> str | None:
        """``host:port`` of the peer."""
        ...

    async def accept(self, *, subprotocol: str | None = None, headers: Mapping[str, str] | None = None) -> None:
        """Complete the handshake (with ``subprotocol`` and extra response ``headers``, if given)."""
        ...

    async def refuse(self, status: int = 403, body: str = "") -> None:
        """Answer the handshake with an HTTP ``status`` (and a plain-text ``body``) instead of the upgrade."""
        ...

    async def receive(self) -> str | bytes | None:
        """The next message, or ``None`` once the link is closed."""
        ...

    async def send(self, data: str | bytes) -> None:
        """Send one message (text for ``str``); ``ConnectionError`` when the link is closed."""
        ...

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Close the link (nothing happens when it is closed already)."""
        ...


WebSocketHandler = Callable[[HttpWebSocket], Awaitable[None]]
"""A WebSocket route's handler: it answers the handshake and talks over the link until it returns."""


class HttpMount(Protocol):
    """A path prefix of the host's HTTP server, held by one plugin while ``async with mount:`` runs.

    Entering it claims the prefix (``IngressError`` when the host serves no HTTP, or another holder has it);
    leaving it removes every route, so a connection that stops or crashes leaves nothing behind. Routes may be
    added before or after entering.
    """

    @property
    def prefix(self) -> str:
        """The mount's path on this host: ``/hooks/<platform>/<account>`` for a channel account."""
        ...

    @property
    def public_url(self) -> str | None:
        """Where the platform reaches ``prefix`` from outside: ``http.public_url`` of ``ishiki.yaml`` followed by
        the prefix (``https://bot.example.com/hooks/telegram/0``); ``None`` when it is not set."""
        ...

    @property
    def local_url(self) -> str | None:
        """``http://<address>:<port><prefix>`` on the address the server listens on (tests and health checks);
        ``None`` before the server is bound."""
        ...

    def route(
        self,
        path: str,
        handler: HttpHandler,
        *,
        methods: Sequence[str] = ("POST",),
        max_body_bytes: int | None = None,
        deadline_seconds: float | None = None,
    ) -> None:
        """Serve ``path`` (``/update``, or ``/`` for the prefix itself) with ``handler`` for ``methods``;
        ``max_body_bytes`` and ``deadline_seconds`` default to the host's settings. ``ValueError`` for a path
        that does not start with ``/`` or is routed already."""
        ...

    def websocket(self, path: str, handler: WebSocketHandler) -> None:
        """Serve WebSockets opened on ``path`` with ``handler`` (see the module docstring); ``ValueError`` as
        for ``route``. A path may have a WebSocket route and an HTTP route both."""
        ...

    async def __aenter__(self) -> HttpMount: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
