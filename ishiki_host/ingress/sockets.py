"""WebSocket routes of the host's HTTP server: the ``HttpWebSocket`` a handler gets, over Starlette's WebSocket.

A mount keeps the links its handlers hold (``OpenSockets``), so leaving the mount closes them (1001, going
away) even while a handler still waits on ``receive``. Uvicorn speaks the protocol (with the ``websockets``
library); a handshake is answered by the handler, with ``accept`` or with an HTTP status (``refuse``, through
the ASGI ``websocket.http.response`` extension, which uvicorn offers; a server without it gets a close, which
uvicorn answers with 403).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import anyio
from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from ishiki_host.ingress.types import WebSocketHandler

__all__ = ["AsgiWebSocket", "OpenSockets", "serve_websocket"]

logger = logging.getLogger("ishiki_host.ingress")

GOING_AWAY = 1001


class AsgiWebSocket:
    """An ``HttpWebSocket`` over one ASGI WebSocket connection (``path`` is the part below the mount)."""

    def __init__(self, socket: WebSocket, path: str):
        self._socket = socket
        self._path = path
        self._headers = {k.lower(): v for k, v in socket.headers.items()}
        first: dict[str, str] = {}
        for key, value in socket.query_params.multi_items():
            first.setdefault(key, value)
        self._query = first
        client = socket.client
        self._client = f"{client.host}:{client.port}" if client is not None else None
        self._closed = False
        self._answered = False

    @property
    def path(self) -> str:
        """The path below the mount's prefix."""
        return self._path

    @property
    def headers(self) -> Mapping[str, str]:
        """The upgrade request's headers, names in lower case."""
        return self._headers

    @property
    def query(self) -> Mapping[str, str]:
        """The first value of each query parameter."""
        return self._query

    @property
    def client(self) -> str | None:
        """``host:port`` of the peer."""
        return self._client

    @property
    def answered(self) -> bool:
        """Whether the handshake was answered (accepted or refused)."""
        return self._answered

    async def accept(self, *, subprotocol: str | None = None, headers: Mapping[str, str] | None = None) -> None:
        """Complete the handshake."""
        raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
        self._answered = True
        await self._socket.accept(subprotocol=subprotocol, headers=raw)

    async def refuse(self, status: int = 403, body: str = "") -> None:
        """Answer the handshake with ``status`` instead of the upgrade (a close where the server cannot)."""
        self._answered = self._closed = True
        if "websocket.http.response" in self._socket.scope.get("extensions", {}):
            await self._socket.send_denial_response(Response(body, status, media_type="text/plain; charset=utf-8"))
        else:
            await self._socket.close(1008, body[:120])

    async def receive(self) -> str | bytes | None:
        """The next message, or ``None`` once the link is closed."""
        if self._closed:
            return None
        try:
            message = await self._socket.receive()
        except (RuntimeError, OSError, WebSocketDisconnect):
            message = {"type": "websocket.disconnect"}
        if message["type"] != "websocket.receive":
            self._closed = True
            return None
        text = message.get("text")
        return text if text is not None else bytes(message.get("bytes") or b"")

    async def send(self, data: str | bytes) -> None:
        """Send one message; ``ConnectionError`` once the link is closed."""
        if self._closed:
            raise ConnectionError("the WebSocket is closed")
        try:
            if isinstance(data, str):
                await self._socket.send_text(data)
            else:
                await self._socket.send_bytes(data)
        except (RuntimeError, OSError, WebSocketDisconnect) as exc:
            self._closed = True
            raise ConnectionError(f"the WebSocket is closed ({exc or type(exc).__name__})") from None

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Close the link (nothing happens when it is closed already)."""
        if self._closed:
            return
        self._closed = True
        if self._socket.application_state == WebSocketState.DISCONNECTED:
            return
        with contextlib.suppress(RuntimeError, OSError):  # the peer left first
            await self._socket.close(code, reason)


class OpenSockets:
    """The links a mount's handlers hold; ``close_all`` ends each handler's link (and its wait)."""

    def __init__(self) -> None:
        self._open: dict[AsgiWebSocket, anyio.CancelScope] = {}
        self._closed = False

    def __len__(self) -> int:
        return len(self._open)

    def add(self, socket: AsgiWebSocket, scope: anyio.CancelScope) -> None:
        """Hold ``socket`` whose handler runs in ``scope`` (cancelled at once when the mount is gone)."""
        self._open[socket] = scope
        if self._closed:
            scope.cancel()

    def discard(self, socket: AsgiWebSocket) -> None:
        """Its handler returned."""
        self._open.pop(socket, None)

    def close_all(self) -> None:
        """Cancel every handler; each link is then closed with 1001 (going away)."""
        self._closed = True
        for scope in self._open.values():
            scope.cancel()


async def serve_websocket(
    scope: Scope, receive: Receive, send: Send, path: str, handler: WebSocketHandler, sockets: OpenSockets
) -> None:
    """Run ``handler`` on the WebSocket of ``scope``; close the link when it returns, raises or is cancelled."""
    socket = AsgiWebSocket(WebSocket(scope, receive, send), path)
    cancel = anyio.CancelScope()
    sockets.add(socket, cancel)
    try:
        with cancel:
            await handler(socket)
    except Exception:
        logger.exception("the WebSocket handler of %s failed; the link is closed", scope.get("path"))
    finally:
        sockets.discard(socket)
        with anyio.CancelScope(shield=True):
            if not socket.answered:
                await socket.refuse(500, "internal error")
            else:
                await socket.close(GOING_AWAY if cancel.cancel_called else 1000)
