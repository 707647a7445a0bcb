"""The host's HTTP ingress: one server per host, off unless ``http.listen`` is set, on which plugins mount
routes under a prefix of their own (``ishiki_host.ingress.types`` is what they see; docs/http.md)."""

from ishiki_host.ingress.mounts import Mount, MountTable
from ishiki_host.ingress.server import HttpIngress
from ishiki_host.ingress.types import (
    HttpHandler,
    HttpMount,
    HttpRequest,
    HttpResponse,
    HttpStream,
    HttpWebSocket,
    WebSocketHandler,
    sse_event,
)

__all__ = [
    "HttpHandler",
    "HttpIngress",
    "HttpMount",
    "HttpRequest",
    "HttpResponse",
    "HttpStream",
    "HttpWebSocket",
    "Mount",
    "MountTable",
    "WebSocketHandler",
    "sse_event",
]
