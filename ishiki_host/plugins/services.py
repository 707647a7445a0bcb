"""What a host shares with the plugins of every runtime: ``HostServices`` (``RuntimeContext.services``).

The host fills in its own services once, at start, before any runtime runs: the time zone of ``ishiki.yaml``,
the memory database (``memory``, or ``memory_error`` saying why there is none), how many memories a turn
retrieves, the embeddings models of ``models.yaml`` (``embeddings``: ``None`` when the host offers none), the
host's runtimes (``runtimes``: a heartbeat reaches the runtime of a chat this way) and a task group for work
that outlives the runtime that started it (``spawn``).

Plugins share host-wide objects of their own by typed key: ``services.setdefault(KEY, factory)`` makes the
object on first use and hands every later caller the same one (the MCP extension keeps its server manager so;
the host puts its heartbeat scheduler under ``ishiki_host.heartbeat.HEARTBEATS``). A ``ServiceKey`` names the
type of what it holds, so ``get`` and ``setdefault`` are typed, and a value of another type is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from ishiki_host.core.shared import ServiceKey, SharedObjects

if TYPE_CHECKING:
    from ishiki_host.gateway.embeddings import EmbeddingSource
    from ishiki_host.plugins.runtime_api import RuntimeContext
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.memory_types import ScopeMode

__all__ = ["DEFAULT_MEMORY_LIMIT", "HostServices", "RuntimeDirectory", "ServiceKey", "Spawn"]

DEFAULT_MEMORY_LIMIT = 20
"""Memories retrieved into a turn's prompt when ``ishiki.yaml`` says nothing (``memory.limit``)."""

Spawn = Callable[[Callable[[], Awaitable[object]], str], None]
"""``spawn(fn, name)``: run ``fn()`` in a task group; a failure is logged with ``name``."""

logger = logging.getLogger("ishiki_host.services")


class RuntimeDirectory(Protocol):
    """The host's runtimes, as plugins reach them (``HostServices.runtimes``)."""

    async def runtime_for(
        self, profile_id: str, sid: str | None = None, channel_id: str | None = None
    ) -> RuntimeContext:
        """The runtime of a profile at a chat (cross mode: the profile's one runtime), spawned if needed.

        ``AgentStopped`` when the profile is not active; ``ValueError`` when a channel-mode profile is asked
        without ``sid`` and ``channel_id``.
        """
        ...


class HostServices(SharedObjects):
    """What a host shares with every runtime's plugins (see the module docstring).

    The attributes are the host's to set; plugins read them. ``memory`` is ``None`` when the host could not
    open ``data/memory.db`` (``memory_error`` says why) and in tests that give no store.
    """

    def __init__(
        self,
        *,
        timezone: str = "UTC",
        memory: MemoryStore | None = None,
        memory_error: str | None = None,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        memory_scope: ScopeMode = "sender",
        runtimes: RuntimeDirectory | None = None,
        spawn: Spawn | None = None,
        embeddings: EmbeddingSource | None = None,
    ):
        super().__init__()
        self.timezone = timezone
        self.memory = memory
        self.memory_error = memory_error
        self.memory_limit = memory_limit
        self.memory_scope: ScopeMode = memory_scope  # memory.scope of ishiki.yaml: which memories a reader recalls
        self.runtimes = runtimes
        self.embeddings = embeddings  # ref -> Embedder (ishiki_host.gateway.embeddings.GatewayEmbeddings)
        self._spawn = spawn

    def spawn(self, fn: Callable[[], Awaitable[object]], *, name: str) -> None:
        """Run ``fn()`` in the host's task group: work that outlives the runtime that started it (a server
        several runtimes share). It is cancelled when the host stops; a failure is logged with ``name``.
        ``RuntimeError`` when there is no host task group (a test without one)."""
        if self._spawn is None:
            raise RuntimeError(f"{name}: this host has no task group for host-wide work")
        self._spawn(fn, name)

    @property
    def can_spawn(self) -> bool:
        """Whether ``spawn`` has a task group to run in."""
        return self._spawn is not None


async def run_logged(fn: Callable[[], Awaitable[object]], name: str) -> None:
    """Run ``fn()``; an exception is logged with ``name``, never raised (what ``spawn`` runs)."""
    try:
        await fn()
    except Exception:
        logger.exception("host-wide work %r failed", name)
