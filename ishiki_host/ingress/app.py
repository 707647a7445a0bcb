"""The ASGI application of the host's HTTP server: find the route, read the body within its cap, run the
handler under its deadline, and answer what the handler cannot (``ingress.types`` lists those answers). A
handler's ``HttpStream`` is sent after the deadline, by ``ingress.streams``; a WebSocket goes to its route's
handler (``ingress.sockets``).

Starlette parses the request (headers, query, client) and writes the response; the routing is the
``MountTable``'s, because mounts come and go with the connections that hold them. ``GET /healthz`` answers
``ok`` for the reverse proxy and the operator's checks.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.websockets import WebSocket

from ishiki_host.ingress.sockets import AsgiWebSocket, serve_websocket
from ishiki_host.ingress.streams import OpenStreams, StreamAnswer
from ishiki_host.ingress.types import HttpRequest, HttpResponse, HttpStream

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from ishiki_host.ingress.mounts import MountTable, Route

__all__ = ["HEALTH_PATH", "IngressApp"]

logger = logging.getLogger("ishiki_host.ingress")

HEALTH_PATH = "/healthz"


class _TooLarge(Exception):
    """The body went over the route's cap."""


class IngressApp:
    """The ASGI callable (see the module docstring); ``served`` counts the requests a handler answered, and
    ``streams`` holds the streams being sent."""

    def __init__(self, table: MountTable):
        self._table = table
        self.served = 0
        self.streams = OpenStreams()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # lifespan is off
        request = Request(scope, receive)
        response = await self._answer(request)
        await response(scope, receive, send)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket route's handler runs for the link's life (``ingress.sockets``); no route: 404."""
        found = self._table.find(scope["path"])
        handler = found[0].websockets.get(found[1]) if found is not None else None
        if found is None or handler is None:
            await AsgiWebSocket(WebSocket(scope, receive, send), scope["path"]).refuse(404, "not found")
            return
        self.served += 1
        await serve_websocket(scope, receive, send, found[1], handler, found[0].sockets)

    async def _answer(self, request: Request) -> Response | StreamAnswer:
        path = request.url.path
        if path == HEALTH_PATH and request.method in ("GET", "HEAD"):
            return Response("ok\n", media_type="text/plain; charset=utf-8")
        found = self._table.find(path)
        route = found[0].routes.get(found[1]) if found is not None else None
        if found is None or route is None:
            return _plain(404, "not found")
        if request.method not in route.methods:
            return _plain(405, "method not allowed", {"Allow": ", ".join(sorted(route.methods))})
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > route.max_body_bytes:
            return _plain(413, f"the body is larger than {route.max_body_bytes} bytes")
        with anyio.move_on_after(route.deadline_seconds):
            return await self._serve(request, found[1], route)
        logger.warning("%s %s took over %g s; answered 503", request.method, path, route.deadline_seconds)
        return _plain(503, "timed out", {"Retry-After": "5"})

    async def _serve(self, request: Request, path: str, route: Route) -> Response | StreamAnswer:
        try:
            body = await _read_body(request, route.max_body_bytes)
        except _TooLarge:
            return _plain(413, f"the body is larger than {route.max_body_bytes} bytes")
        except ClientDisconnect:
            return _plain(400, "the client left before sending the whole body")
        client = request.client
        http_request = HttpRequest(
            method=request.method,
            path=path,
            headers={k.lower(): v for k, v in request.headers.items()},
            query=_first_values(request.query_params.multi_items()),
            query_items=tuple(request.query_params.multi_items()),
            body=body,
            client=f"{client.host}:{client.port}" if client is not None else None,
        )
        try:
            answer: object = await route.handler(http_request)
        except Exception:
            logger.exception("the handler of %s %s failed; answered 500", request.method, request.url.path)
            return _plain(500, "internal error")
        if isinstance(answer, HttpStream):
            self.served += 1
            return StreamAnswer(answer, self.streams, f"{request.method} {request.url.path}")
        if not isinstance(answer, HttpResponse):  # an untyped plugin's mistake: logged, nothing of it answered
            logger.error("the handler of %s %s answered %r, not an HttpResponse", request.method, path, answer)
            return _plain(500, "internal error")
        self.served += 1
        return Response(
            answer.body, status_code=answer.status, headers=dict(answer.headers), media_type=answer.media_type
        )


async def _read_body(request: Request, limit: int) -> bytes:
    """The whole body, or ``_TooLarge`` as soon as it passes ``limit`` (a body without Content-Length too)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _first_values(items: list[tuple[str, str]]) -> dict[str, str]:
    """The first value of each parameter, in the order the parameters first appear."""
    first: dict[str, str] = {}
    for key, value in items:
        first.setdefault(key, value)
    return first


def _plain(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    return Response(text + "\n", status_code=status, headers=headers, media_type="text/plain; charset=utf-8")
