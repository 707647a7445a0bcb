"""The mounts of the host's HTTP server: which prefix is held, and the routes below it.

A ``Mount`` is what ``HttpIngress.mount(prefix)`` hands a plugin (the ``HttpMount`` of ``ingress.types``).
It claims its prefix in the ``MountTable`` on entering and gives it back on leaving, with every route. The
table finds the mount of a request's path by its longest prefix, so ``/hooks/telegram/1`` never catches
``/hooks/telegram/10``: a prefix matches the path itself or the path followed by ``/``. WebSocket routes
(``websockets``) are kept apart from HTTP ones, and the links open on them (``sockets``) are closed on leaving.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from ishiki_host.errors import IngressError
from ishiki_host.ingress.sockets import OpenSockets

if TYPE_CHECKING:
    from ishiki_host.config.host import HttpSettings
    from ishiki_host.ingress.types import HttpHandler, WebSocketHandler

__all__ = ["Mount", "MountTable", "Route", "check_prefix"]


@dataclass(frozen=True, slots=True)
class Route:
    """One path of a mount: its handler, the methods it takes, its body cap and deadline."""

    handler: HttpHandler
    methods: frozenset[str]
    max_body_bytes: int
    deadline_seconds: float


def check_prefix(prefix: str) -> str:
    """``prefix`` if it is a mount prefix (``/`` and segments, no trailing ``/``, no ``.`` or ``..``), else
    ``ValueError``."""
    segments = prefix.split("/")
    if not prefix.startswith("/") or prefix == "/" or prefix.endswith("/") or "//" in prefix:
        raise ValueError(f"mount prefix {prefix!r}: a path like /hooks/whatsapp/0, without a trailing /")
    if any(s in (".", "..") or any(c in s for c in "?#%\\ ") for s in segments[1:]):
        raise ValueError(f"mount prefix {prefix!r}: segments may not be . or .. or hold ?, #, %, \\ or spaces")
    return prefix


class MountTable:
    """The prefixes held right now, and the routes of each."""

    def __init__(self) -> None:
        self._held: dict[str, Mount] = {}

    def prefixes(self) -> list[str]:
        """The prefixes held, sorted."""
        return sorted(self._held)

    def claim(self, mount: Mount) -> None:
        """Hold ``mount.prefix``; ``IngressError`` when another mount holds it."""
        if mount.prefix in self._held:
            raise IngressError(f"the HTTP path {mount.prefix} is already mounted (another connection holds it)")
        self._held[mount.prefix] = mount

    def release(self, mount: Mount) -> None:
        """Give the prefix back (only ``mount`` itself can)."""
        if self._held.get(mount.prefix) is mount:
            del self._held[mount.prefix]

    def find(self, path: str) -> tuple[Mount, str] | None:
        """The mount serving ``path`` and the path below its prefix (``/`` for the prefix itself)."""
        best: Mount | None = None
        for prefix, mount in self._held.items():
            if (path == prefix or path.startswith(prefix + "/")) and (best is None or len(prefix) > len(best.prefix)):
                best = mount
        if best is None:
            return None
        return best, path[len(best.prefix) :] or "/"


class Mount:
    """A plugin's prefix (see the module docstring); created by ``HttpIngress.mount``."""

    def __init__(
        self,
        prefix: str,
        table: MountTable,
        settings: HttpSettings,
        local_base: Callable[[], str | None],
        unavailable: Callable[[], str | None],
    ):
        self._prefix = check_prefix(prefix)
        self._table = table
        self._settings = settings
        self._local_base = local_base
        self._unavailable = unavailable
        self.routes: dict[str, Route] = {}
        self.websockets: dict[str, WebSocketHandler] = {}
        self.sockets = OpenSockets()
        self._entered = False

    @property
    def prefix(self) -> str:
        """The mount's path on this host."""
        return self._prefix

    @property
    def public_url(self) -> str | None:
        """``http.public_url`` followed by the prefix; ``None`` when it is not set."""
        base = self._settings.public_url
        return None if base is None else base + self._prefix

    @property
    def local_url(self) -> str | None:
        """The prefix on the address the server is bound to; ``None`` before it is."""
        base = self._local_base()
        return None if base is None else base + self._prefix

    def websocket(self, path: str, handler: WebSocketHandler) -> None:
        """Serve WebSockets on ``path`` below the prefix with ``handler`` (see ``HttpMount.websocket``)."""
        _check_path(path, self._prefix)
        if path in self.websockets:
            raise ValueError(f"WebSocket route {path!r} of {self._prefix} is routed already")
        self.websockets[path] = handler

    def route(
        self,
        path: str,
        handler: HttpHandler,
        *,
        methods: Sequence[str] = ("POST",),
        max_body_bytes: int | None = None,
        deadline_seconds: float | None = None,
    ) -> None:
        """Serve ``path`` below the prefix with ``handler`` (see ``HttpMount.route``)."""
        _check_path(path, self._prefix)
        if path in self.routes:
            raise ValueError(f"route {path!r} of {self._prefix} is routed already")
        if not methods:
            raise ValueError(f"route {path!r} of {self._prefix}: name at least one method")
        if max_body_bytes is not None and max_body_bytes < 0:
            raise ValueError(f"route {path!r} of {self._prefix}: max_body_bytes must be 0 or more")
        if deadline_seconds is not None and deadline_seconds <= 0:
            raise ValueError(f"route {path!r} of {self._prefix}: deadline_seconds must be above 0")
        self.routes[path] = Route(
            handler,
            frozenset(m.upper() for m in methods),
            self._settings.max_body_bytes if max_body_bytes is None else max_body_bytes,
            self._settings.deadline_seconds if deadline_seconds is None else deadline_seconds,
        )

    async def __aenter__(self) -> Mount:
        why = self._unavailable()
        if why is not None:
            raise IngressError(f"cannot serve {self._prefix}: {why}")
        self._table.claim(self)
        self._entered = True
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._entered:
            self._entered = False
            self._table.release(self)
            self.routes.clear()
            self.websockets.clear()
            self.sockets.close_all()


def _check_path(path: str, prefix: str) -> None:
    if not path.startswith("/") or "?" in path or "#" in path:
        raise ValueError(f"route {path!r} of {prefix}: a path starting with / (no query)")
