"""What a plugin sees of the host's HTTP ingress: a request, a response, a handler and the mount it serves on.

A plugin never imports the server. It asks its host for a mount (a channel: ``ChannelHost.http_mount()``), a
path prefix of its own such as ``/hooks/whatsapp/0``, and adds routes below it. A handler is an
``async def (HttpRequest) -> HttpResponse``. The body has already been read in full, within the route's size
cap, so a signature can be checked over the raw bytes before anything is parsed. The whole request (reading
the body and the handler) runs under the route's deadline.

What the host answers without asking the handler:

- 404 for a path no route of the mount serves;
- 405 (with ``Allow``) for a method the route does not take;
- 413 for a body over the cap, whether it declares its length or not;
- 503 when the deadline passed (the platform retries later: a webhook never stalls the host);
- 500 when the handler raised (logged with its traceback; the response says nothing of it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol

__all__ = [
    "HttpHandler",
    "HttpMount",
    "HttpRequest",
    "HttpResponse",
]


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


HttpHandler = Callable[[HttpRequest], Awaitable[HttpResponse]]
"""A route's handler."""


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

    async def __aenter__(self) -> HttpMount: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
