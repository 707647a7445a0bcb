"""The HTTP transports (streamable HTTP, and the older SSE one) of the SDK, with ``headers`` and a lost signal.

``connect()`` yields the SDK's stream pair; the read side is wrapped so that its end (the transport gave up)
calls ``on_lost`` once, the same signal the stdio transport gives when a process exits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from ishiki_ext_mcp.stdio import ProcessInfo

if TYPE_CHECKING:
    from types import TracebackType

    from mcp.shared.message import SessionMessage

    from ishiki_ext_mcp.config import ServerSpec

__all__ = ["HttpTransport"]

_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


class _Watched:
    """A read stream that reports its end; everything else goes to the SDK's stream."""

    def __init__(self, inner: Any, on_end: Callable[[], None]):
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class HttpTransport:
    """Connects to ``spec.url`` with ``spec.headers`` on every request."""

    def __init__(self, spec: ServerSpec, on_lost: Callable[[], None]):
        self.spec = spec
        self.info = ProcessInfo()
        self.fast_stop = False
        self._on_lost = on_lost
        self._closing = False

    def stderr_tail(self, lines: int = 5) -> str:
        """Nothing: a remote server has no stderr here."""
        return ""

    def _lost(self) -> None:
        if not self._closing:
            self._on_lost()

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[tuple[Any, Any]]:
        """Open the transport and yield the (read, write) pair the SDK ``Client`` drives."""
        spec = self.spec
        assert spec.url is not None
        self._closing = False
        async with AsyncExitStack() as stack:
            if spec.transport == "sse":
                read, write = await stack.enter_async_context(sse_client(spec.url, headers=dict(spec.headers)))
            else:
                client = await stack.enter_async_context(
                    httpx2.AsyncClient(headers=dict(spec.headers), timeout=_TIMEOUT)
                )
                read, write = await stack.enter_async_context(streamable_http_client(spec.url, http_client=client))
            try:
                yield _Watched(read, self._lost), write
            finally:
                self._closing = True
