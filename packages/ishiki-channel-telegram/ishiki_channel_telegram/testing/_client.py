"""The HTTP/1.1 client the fake delivers webhooks with: keep-alive connections over anyio, just enough HTTP.

Telegram's servers are not in the bot's process, but the fake is: a general client (httpx) spends several
times what the bot's own server spends on a request, which would hide the bot's cost in a benchmark of
webhook mode. This one writes a request in one piece and reads the status line, the headers and a
``Content-Length`` or chunked body, as ``_http`` does on the server side. Plain ``http`` only (the fake's
``proxy`` points at a loopback server).
"""

from __future__ import annotations

import urllib.parse

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from ishiki_channel_telegram.testing._http import read_chunked

__all__ = ["DeliveryFailed", "WebhookClient"]

_MAX_HEAD = 64 * 1024
_GONE = (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.DelimiterNotFound, OSError)


class DeliveryFailed(Exception):
    """No answer came: the message says why, in the words ``getWebhookInfo`` uses."""


class _Connection:
    def __init__(self, stream: SocketStream):
        self.stream = stream
        self.reader = BufferedByteReceiveStream(stream)


class WebhookClient:
    """Posts to ``http://host:port/...`` URLs, reusing idle connections; ``aclose`` closes them."""

    def __init__(self, *, timeout: float = 60.0):
        self._timeout = timeout
        self._idle: dict[tuple[str, int], list[_Connection]] = {}

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        """Post ``body`` and return the answer's status; ``DeliveryFailed`` when none came."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise DeliveryFailed(f"the fake delivers to http:// URLs only, not {url}")
        address = (parts.hostname, parts.port or 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        request = f"POST {target} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-length: {len(body)}\r\n{head}\r\n"
        connection = await self._connection(address)
        try:
            with anyio.fail_after(self._timeout):
                await connection.stream.send(request.encode("latin-1") + body)
                status, keep = await _read_response(connection.reader)
        except TimeoutError:
            await connection.stream.aclose()
            raise DeliveryFailed("Read timeout expired") from None
        except _GONE:
            await connection.stream.aclose()
            raise DeliveryFailed("Connection closed before the answer") from None
        if keep:
            self._idle.setdefault(address, []).append(connection)
        else:
            await connection.stream.aclose()
        return status

    async def aclose(self) -> None:
        """Close every idle connection."""
        for connections in self._idle.values():
            for connection in connections:
                await connection.stream.aclose()
        self._idle.clear()

    async def _connection(self, address: tuple[str, int]) -> _Connection:
        idle = self._idle.get(address)
        if idle:
            return idle.pop()
        try:
            return _Connection(await anyio.connect_tcp(*address))
        except OSError:
            raise DeliveryFailed("Connection refused") from None


async def _read_response(reader: BufferedByteReceiveStream) -> tuple[int, bool]:
    """The status, and whether the connection may carry another request; the body is read and dropped."""
    head = (await reader.receive_until(b"\r\n\r\n", _MAX_HEAD)).decode("latin-1")
    line, *header_lines = head.split("\r\n")
    version, status, *_ = line.split(" ", 2)
    headers = {}
    for header in header_lines:
        name, _, value = header.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        await read_chunked(reader)
    elif "content-length" in headers:
        await reader.receive_exactly(int(headers["content-length"]))
    else:
        return int(status), False  # the body runs to the end of the connection: nothing follows it
    close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
    return int(status), not close
