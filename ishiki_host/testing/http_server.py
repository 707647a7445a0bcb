"""A small HTTP/1.1 server on 127.0.0.1 for fakes of remote services, running its own event loop in a thread.

Because it lives in its own thread it serves sync and async tests alike (and a benchmark). A handler turns
each ``RecordedRequest`` into a ``Response``: a body with ``Content-Length``, or chunks sent one by one with
chunked transfer encoding (an event stream), or no answer at all until the server closes (``hang``), or a
connection cut mid-body (``cut``). Keep-alive is supported, so clients reuse connections as in production.
"""

from __future__ import annotations

import asyncio
import json
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from ishiki_host.jsontypes import Json

__all__ = ["LoopbackServer", "RecordedRequest", "Response"]


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received: method, path, headers (lower-case names), raw body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Json:
        """The body parsed as JSON (``None`` if it is not JSON)."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


@dataclass(frozen=True)
class Response:
    """What to answer. ``chunks`` (if set) are sent with chunked encoding, each written separately.

    ``hang``: send nothing until the server closes. ``cut``: close the connection before the body is complete.
    ``delay``: wait this many seconds before answering (other connections are served meanwhile).
    ``chunk_delay``: wait this many seconds between two chunks (a model writing its answer token by token).
    ``gate``: send every chunk but the last, that one only once the event is set (a test holds a stream unfinished
    until it has seen what the client did with what came; the server's stop releases it too).
    """

    status: int = 200
    headers: Sequence[tuple[str, str]] = ()
    body: bytes = b""
    chunks: Sequence[bytes] | None = None
    hang: bool = False
    cut: bool = False
    delay: float = 0.0
    chunk_delay: float = 0.0
    gate: threading.Event | None = field(default=None, compare=False)

    @classmethod
    def json(cls, data: Json, status: int = 200, headers: Sequence[tuple[str, str]] = ()) -> Response:
        """A JSON answer."""
        body = json.dumps(data).encode()
        return cls(status, (("content-type", "application/json"), *headers), body)


Handler = Callable[[RecordedRequest], Response]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error"}


def _head(response: Response, chunked: bool, length: int) -> bytes:
    lines = [f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Status')}"]
    lines += [f"{name}: {value}" for name, value in response.headers]
    lines.append("transfer-encoding: chunked" if chunked else f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@dataclass
class _State:
    loop: asyncio.AbstractEventLoop | None = None
    stop: asyncio.Event | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


class LoopbackServer:
    """Serves ``handler`` on ``127.0.0.1:<ephemeral port>`` from a background thread; a context manager.

    ``requests`` are the requests received; ``in_flight`` counts those being answered, ``most_in_flight`` is the
    most there were at once (a test of a concurrency limit reads it); ``connections`` counts the connections
    accepted (a test of connection reuse reads it)."""

    def __init__(self, handler: Handler):
        self.handler = handler
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.connections = 0
        self.port = 0
        self._state = _State()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        """Start serving; returns once the port is bound."""
        self._thread = threading.Thread(target=self._run, name=f"loopback-{type(self).__name__}", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the loopback server did not start within 10 s")
        if self._error is not None:
            raise RuntimeError("the loopback server failed to start") from self._error
        return self

    def close(self) -> None:
        """Stop serving: hanging answers end, open connections close, the thread is joined."""
        state, thread = self._state, self._thread
        if thread is None or state.loop is None or state.stop is None:
            return
        state.loop.call_soon_threadsafe(state.stop.set)
        thread.join(10)
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._serve(loop))
        finally:
            loop.close()

    async def _serve(self, loop: asyncio.AbstractEventLoop) -> None:
        self._state.loop, self._state.stop = loop, asyncio.Event()
        try:
            server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        except OSError as exc:
            self._error = exc
            self._ready.set()
            return
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._state.stop.wait()
        server.close()
        for task in list(self._state.tasks):
            task.cancel()
        await asyncio.gather(*self._state.tasks, return_exceptions=True)
        await server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._state.tasks.add(task)
        self.connections += 1
        try:
            while await self._exchange(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            self._state.tasks.discard(task)
            writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; whether the connection stays open."""
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        headers = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        request = RecordedRequest(method, path, headers, body)
        self.requests.append(request)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await self._answer(request, writer)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: RecordedRequest, writer: asyncio.StreamWriter) -> bool:
        try:
            response = self.handler(request)
        except Exception:
            response = Response(500, (("content-type", "text/plain"),), traceback.format_exc().encode())
        if response.delay > 0:
            await asyncio.sleep(response.delay)
        if response.hang:
            assert self._state.stop is not None
            await self._state.stop.wait()
            return False
        await self._write(writer, response)
        return not response.cut and request.headers.get("connection", "").lower() != "close"

    async def _write(self, writer: asyncio.StreamWriter, response: Response) -> None:
        if response.chunks is None:
            body = response.body
            if response.cut:
                writer.write(_head(response, False, len(body) + 64) + body)
            else:
                writer.write(_head(response, False, len(body)) + body)
            await writer.drain()
            return
        writer.write(_head(response, True, 0))
        last = len(response.chunks) - 1
        for index, chunk in enumerate(response.chunks):
            if index == last and index and response.gate is not None:
                await self._released(response.gate)
            if index and response.chunk_delay > 0:
                await asyncio.sleep(response.chunk_delay)
            if chunk:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
        if not response.cut:
            writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def _released(self, gate: threading.Event) -> None:
        """Until ``gate`` is set or the server stops (which sets it, so the thread waiting on it ends too)."""
        assert self._state.stop is not None
        opened = asyncio.get_running_loop().run_in_executor(None, gate.wait)
        stopped = asyncio.ensure_future(self._state.stop.wait())
        either: list[asyncio.Future[Any]] = [opened, stopped]
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:  # stopped or cancelled: set it, or the executor's thread would wait on it forever
            gate.set()
            stopped.cancel()
        await opened
