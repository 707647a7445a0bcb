"""The host's HTTP server: uvicorn serving ``IngressApp`` on the host's own event loop.

Why uvicorn: it is the most used ASGI server, runs on asyncio and on uvloop (the host's two loops), and takes
a socket bound by its caller. ``run`` binds the socket itself, so readiness means "connections are accepted"
(the kernel queues them from ``listen()`` on) and port 0 gives a free port whose number is known at once.
It then uses uvicorn's ``startup`` and ``shutdown`` around the host's own wait instead of ``serve``: ``serve``
installs SIGINT/SIGTERM handlers of its own (the host's are ``ishiki run``'s) and polls a flag every 0.1 s to
notice it should stop, where a cancellation of the host's task group is the host's way to say so.

Stopping (the host closes, after its channels stopped and gave back their mounts): the streams being sent
end (their producers are closed and each body ends as a complete one, so a browser's ``EventSource`` sees
the end rather than a reset), the listening socket closes, open connections are asked to finish, and requests
still running get ``GRACE_SECONDS`` before they are cancelled. A webhook cut off this way was never answered
200, so its platform sends it again.

A bind that fails (the port is taken, the address is not this machine's) does not stop the host: the error
is logged once, ``status()`` shows it, and every mount says it in its ``IngressError``.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from typing import TYPE_CHECKING, Any

import anyio
import uvicorn

from ishiki_host.ingress.app import IngressApp
from ishiki_host.ingress.mounts import Mount, MountTable

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from ishiki_host.config.host import HttpSettings

__all__ = ["GRACE_SECONDS", "HttpIngress"]

logger = logging.getLogger("ishiki_host.ingress")

GRACE_SECONDS = 5.0
"""How long requests still running at a stop may take before they are cancelled."""


class HttpIngress:
    """The host's HTTP server (see the module docstring). ``state``: ``off`` (no ``http.listen``), ``new``,
    ``running``, ``failed`` (the bind failed: ``error``) or ``stopped``."""

    def __init__(self, settings: HttpSettings):
        self.settings = settings
        self.table = MountTable()
        self.app = IngressApp(self.table)
        self.state = "off" if settings.listen is None else "new"
        self.error: str | None = None
        self._address: tuple[str, int] | None = None

    @property
    def address(self) -> tuple[str, int] | None:
        """The address and port the server is bound to, once it is."""
        return self._address

    @property
    def base_url(self) -> str | None:
        """``http://<address>:<port>`` once bound (``[v6]`` in brackets)."""
        if self._address is None:
            return None
        host, port = self._address
        host = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def mount(self, prefix: str) -> Mount:
        """A mount for ``prefix`` (``ValueError`` for a malformed one); entering it claims the prefix."""
        return Mount(prefix, self.table, self.settings, lambda: self.base_url, self._unavailable)

    def status(self) -> dict[str, Any]:
        """``state``, ``listen``, ``address``, ``publicUrl``, the prefixes mounted, requests served, streams
        open, ``error``."""
        return {
            "state": self.state,
            "listen": self.settings.listen_text,
            "address": self.base_url,
            "publicUrl": self.settings.public_url,
            "mounts": self.table.prefixes(),
            "served": self.app.served,
            "streams": len(self.app.streams),
            "error": self.error,
        }

    def _unavailable(self) -> str | None:
        if self.state == "off":
            return "the host serves no HTTP: set http.listen in ishiki.yaml (e.g. 127.0.0.1:8080)"
        if self.state == "failed":
            return f"the host's HTTP server could not listen on {self.settings.listen_text}: {self.error}"
        if self.state == "stopped":
            return "the host's HTTP server has stopped"
        return None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Bind, report readiness, serve until cancelled, then stop as the module docstring says. A failed
        bind reports readiness too (the host goes on without HTTP) and returns."""
        if self.settings.listen is None:
            task_status.started()
            return
        try:
            sock = _bind(*self.settings.listen)
        except OSError as exc:
            self.state, self.error = "failed", exc.strerror or str(exc)
            logger.error("HTTP: cannot listen on %s: %s", self.settings.listen_text, self.error)
            task_status.started()
            return
        with contextlib.closing(sock):
            self._address = sock.getsockname()[:2]
            server = _server(self.app, self.settings)
            await server.startup(sockets=[sock])
            self.state = "running"
            logger.info("HTTP: listening on %s", self.base_url)
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self.state = "stopped"
                self.app.streams.stop()  # before uvicorn waits for the connections, which a stream holds open
                with anyio.CancelScope(shield=True):
                    await server.shutdown(sockets=[sock])


class _HostServer(uvicorn.Server):
    """uvicorn's server without its signal handlers (the host has its own; see the module docstring)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


def _server(app: IngressApp, settings: HttpSettings) -> _HostServer:
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        access_log=False,
        server_header=False,
        limit_concurrency=settings.max_connections,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=int(GRACE_SECONDS),
        h11_max_incomplete_event_size=64 * 1024,  # the request line and headers: a cap on what precedes the body
    )
    config.load()
    server = _HostServer(config)
    server.lifespan = config.lifespan_class(config)  # what ``serve`` sets before ``startup``
    return server


def _bind(address: str, port: int) -> socket.socket:
    """A listening, non-blocking TCP socket on ``address:port``."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
