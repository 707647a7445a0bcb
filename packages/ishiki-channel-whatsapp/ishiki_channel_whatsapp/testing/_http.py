"""A small HTTP/1.1 server on 127.0.0.1 (an ephemeral port) for the fake Graph API, running in the caller's
event loop (so the fake's state needs no locks, and a test waits on its changes, never on a timer).

It speaks just enough HTTP for httpx: keep-alive, ``Content-Length`` and chunked request bodies, and
``Content-Length`` responses. Request parameters are read the ways the Graph API accepts them: the query
string, a JSON body, an urlencoded form, or ``multipart/form-data`` (uploads). A handler returns a ``Reply``,
or ``None`` to drop the connection without an answer (what a network cut looks like to the client). (The
Telegram channel's test kit has the same server; packages share nothing but the host's face.)
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import json
import traceback
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import ByteStream, SocketAttribute
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["Reply", "Request", "Upload", "serve_http"]

_MAX_HEAD = 64 * 1024
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}
_GONE = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.DelimiterNotFound,
    OSError,
)


@dataclass(frozen=True, slots=True)
class Upload:
    """A file sent in a multipart request."""

    filename: str
    data: bytes
    media_type: str


@dataclass(slots=True)
class Request:
    """One request: method, path, headers (lower-case names), parameters (query and body), the JSON body
    (``None`` when it is not JSON) and uploads."""

    method: str
    path: str
    headers: dict[str, str]
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    uploads: dict[str, Upload] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer: status, body and its media type."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"

    @classmethod
    def of_json(cls, data: Any, status: int = 200) -> Reply:
        """A JSON answer (UTF-8; a lone surrogate, which UTF-8 cannot hold, as its ``\\uXXXX`` escape)."""
        try:
            return cls(status, json.dumps(data, ensure_ascii=False).encode("utf-8"))
        except UnicodeEncodeError:
            return cls(status, json.dumps(data).encode("ascii"))

    def encode(self) -> bytes:
        """The bytes on the wire."""
        head = (
            f"HTTP/1.1 {self.status} {_REASONS.get(self.status, 'Status')}\r\n"
            f"Content-Type: {self.content_type}\r\nContent-Length: {len(self.body)}\r\n\r\n"
        )
        return head.encode("latin-1") + self.body


Handler = Callable[[Request], Awaitable[Reply | None]]


@contextlib.asynccontextmanager
async def serve_http(handler: Handler, errors: list[str]) -> AsyncIterator[int]:
    """Serve ``handler`` until the block ends; yields the port. A handler's crash becomes a 500 answer and an
    entry in ``errors`` (a test should assert it stays empty)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, lambda stream: _connection(stream, handler, errors))
        yield listener.extra(SocketAttribute.local_port)
        tg.cancel_scope.cancel()


async def _connection(stream: ByteStream, handler: Handler, errors: list[str]) -> None:
    async with stream:
        reader = BufferedByteReceiveStream(stream)
        while True:
            try:
                request = await _read_request(reader)
            except _GONE:
                return
            except ValueError as exc:
                await stream.send(Reply.of_json({"error": {"message": str(exc), "code": 100}}, 400).encode())
                return
            try:
                reply = await handler(request)
            except Exception:
                errors.append(traceback.format_exc())
                reply = Reply.of_json({"error": {"message": "fake server error", "code": 1}}, 500)
            if reply is None:
                return
            try:
                await stream.send(reply.encode())
            except _GONE:
                return


async def _read_request(reader: BufferedByteReceiveStream) -> Request:
    head = (await reader.receive_until(b"\r\n\r\n", _MAX_HEAD)).decode("latin-1")
    line, *header_lines = head.split("\r\n")
    method, target, _ = line.split(" ", 2)
    headers = {}
    for header in header_lines:
        name, _, value = header.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    else:
        body = (
            await reader.receive_exactly(int(headers.get("content-length", "0")))
            if "content-length" in headers
            else b""
        )
    path, _, query = target.partition("?")
    request = Request(method, urllib.parse.unquote(path), headers)
    request.params.update(urllib.parse.parse_qsl(query))
    _read_body(request, headers.get("content-type", ""), body)
    return request


async def _read_chunked(reader: BufferedByteReceiveStream) -> bytes:
    chunks: list[bytes] = []
    while True:
        size = int((await reader.receive_until(b"\r\n", 1024)).split(b";")[0], 16)
        if size == 0:
            await reader.receive_until(b"\r\n", _MAX_HEAD)
            return b"".join(chunks)
        chunks.append(await reader.receive_exactly(size))
        await reader.receive_exactly(2)


def _read_body(request: Request, content_type: str, body: bytes) -> None:
    kind = content_type.split(";")[0].strip().lower()
    if not body:
        return
    if kind == "application/json":
        data = json.loads(body)
        if not isinstance(data, dict):
            raise ValueError("the JSON body must be an object")
        request.json = data
        request.params.update(data)
    elif kind == "application/x-www-form-urlencoded":
        request.params.update(urllib.parse.parse_qsl(body.decode("utf-8")))
    elif kind == "multipart/form-data":
        _read_multipart(request, content_type, body)


def _read_multipart(request: Request, content_type: str, body: bytes) -> None:
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode("latin-1") + body
    )
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(name, str) or not isinstance(payload, bytes):
            continue
        filename = part.get_filename()
        if filename is None:
            request.params[name] = payload.decode("utf-8")
        else:
            request.uploads[name] = Upload(filename, payload, part.get_content_type())
