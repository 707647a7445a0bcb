"""Sending an ``HttpStream``: its chunks relayed to Starlette's ``StreamingResponse``, keep-alives when idle,
and every open stream ended when the ingress stops.

A producer task iterates the handler's chunks and puts them on a memory stream, which the response reads.
Why a task rather than handing the chunks to Starlette: an idle stream must send a keep-alive while the
producer waits, and a stop must end the body properly, and neither may cancel a pending ``__anext__`` in the
response (that would lose a chunk, or leave the client with a reset). So the producer is cancelled in its own
task; it closes the iterator (``aclose()``: the plugin's ``finally`` runs), then its end of the memory stream,
and the response sees the end of its chunks and finishes the chunked body as a completed one.

The producer stops when the chunks run out, when they raise (logged once; the body ends there), when the
client leaves (``StreamingResponse`` watches for ``http.disconnect`` and returns; this cancels the producer),
and when ``OpenStreams.stop`` is called (the ingress stopping: ``server.py``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import anyio
from starlette.responses import StreamingResponse

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectSendStream
    from starlette.types import Receive, Scope, Send

    from ishiki_host.ingress.types import HttpStream

__all__ = ["CLOSE_SECONDS", "OpenStreams", "StreamAnswer"]

logger = logging.getLogger("ishiki_host.ingress")

CLOSE_SECONDS = 2.0
"""How long a producer's cleanup (its ``finally``) may take once its stream ends; well within the server's
grace at a stop, so the body still ends properly when a plugin's cleanup hangs."""


class OpenStreams:
    """The streams being sent right now; ``stop`` ends them all, and any that start after it at once."""

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self._stopped = False

    def __len__(self) -> int:
        return len(self._scopes)

    def stop(self) -> None:
        """End every open stream (its producer is cancelled and closed; its response finishes)."""
        self._stopped = True
        for scope in self._scopes:
            scope.cancel()

    @contextlib.contextmanager
    def hold(self) -> Iterator[anyio.CancelScope]:
        """A scope for one stream's producer, cancelled by ``stop``, held while the stream is open."""
        scope = anyio.CancelScope()
        if self._stopped:
            scope.cancel()
        self._scopes.add(scope)
        try:
            yield scope
        finally:
            self._scopes.discard(scope)


class _Quiet:
    """When a chunk last went out. The memory stream has no buffer, so a send returns once the response took
    the chunk: the time after it is how long the client has heard nothing."""

    __slots__ = ("since",)

    def __init__(self, since: float):
        self.since = since


class StreamAnswer:
    """The ASGI answer for an ``HttpStream`` a handler returned (see the module docstring); ``what`` names the
    request in log lines."""

    def __init__(self, stream: HttpStream, streams: OpenStreams, what: str):
        self._stream = stream
        self._streams = streams
        self._what = what

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stream = self._stream
        to_response, from_producer = anyio.create_memory_object_stream[bytes]()
        response = StreamingResponse(
            from_producer,  # its chunks until the producer closes its end
            status_code=stream.status,
            headers=dict(stream.headers),
            media_type=stream.media_type,
        )
        with self._streams.hold() as stop:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._produce, to_response, stop)
                with from_producer:
                    await response(scope, receive, send)
                tg.cancel_scope.cancel()  # the client left before the chunks ran out

    async def _produce(self, to_response: MemoryObjectSendStream[bytes], stop: anyio.CancelScope) -> None:
        """Relay the chunks, with keep-alives while they are slow to come, until they end or ``stop`` is
        cancelled; then close the iterator and the memory stream (which ends the response)."""
        every = self._stream.keep_alive_seconds
        quiet = _Quiet(anyio.current_time())
        with to_response, stop:
            async with anyio.create_task_group() as tg:
                if every is not None:
                    tg.start_soon(_keep_alive, to_response, every, _encode(self._stream.keep_alive_chunk), quiet)
                await self._relay(to_response, quiet)
                tg.cancel_scope.cancel()

    async def _relay(self, to_response: MemoryObjectSendStream[bytes], quiet: _Quiet) -> None:
        iterator = aiter(self._stream.chunks)
        try:
            while True:
                try:
                    chunk = _encode(await anext(iterator))
                except StopAsyncIteration:
                    return
                except Exception:
                    logger.exception("the stream of %s failed; its body ends here", self._what)
                    return
                try:
                    await to_response.send(chunk)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the response is over (the client left)
                quiet.since = anyio.current_time()
        finally:
            await _close(iterator, self._what)


async def _keep_alive(to_response: MemoryObjectSendStream[bytes], every: float, chunk: bytes, quiet: _Quiet) -> None:
    """Send ``chunk`` whenever ``every`` seconds passed since anything was sent, until the response is over."""
    while True:
        await anyio.sleep_until(quiet.since + every)
        if anyio.current_time() >= quiet.since + every:
            try:
                await to_response.send(chunk)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the client left while this waited: the relay ends the stream, not this
            quiet.since = anyio.current_time()


async def _close(iterator: object, what: str) -> None:
    """``aclose()`` the iterator when it has one, shielded from the stop that may have caused it and capped at
    ``CLOSE_SECONDS``; a failure of the plugin's cleanup is logged, not raised into the response."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is None:
        return
    with anyio.move_on_after(CLOSE_SECONDS, shield=True) as capped:
        try:
            await aclose()
        except Exception:
            logger.exception("closing the stream of %s failed", what)
    if capped.cancelled_caught:
        logger.warning("closing the stream of %s took over %g s; left behind", what, CLOSE_SECONDS)


def _encode(chunk: object) -> bytes:
    """A chunk as bytes (``str`` as UTF-8); ``TypeError`` for anything else, reported as the stream failing."""
    if isinstance(chunk, bytes):
        return chunk
    if isinstance(chunk, str):
        return chunk.encode()
    raise TypeError(f"a stream chunk is bytes or str, not {type(chunk).__name__}")
