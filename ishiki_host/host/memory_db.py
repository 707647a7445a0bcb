"""The host's memory database and the skills folder synced into it.

At start the host opens ``data/memory.db`` (``MemoryStore``) and shares it as ``services.memory``, with the
retrieval limit of ``ishiki.yaml``'s ``memory`` block as ``services.memory_limit``, then syncs ``skills/``
into it; on every reload tick (and on ``reload``) the skills folder is polled again, so added,
edited and removed skills apply without a restart.

A database the host must not use (corrupt, another application's, a newer schema) is never touched: the error
is logged with its hint, ``services.memory_error`` says why, and the host runs on without long-term
memory. Profiles keep answering; the memory extension reports the problem in ``/status``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ishiki_host.errors import StoreError
from ishiki_host.memory.retrieval import RetrievalSettings
from ishiki_host.memory.skills import SkillsWatcher
from ishiki_host.store.db import memory_db_path
from ishiki_host.store.memory_store import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from ishiki_host.core.clock import Clock
    from ishiki_host.plugins.services import HostServices

__all__ = ["HostMemory"]

logger = logging.getLogger("ishiki_host.host")


class HostMemory:
    """The memory store of one host and its skills watcher (see the module docstring)."""

    def __init__(self, config_dir: Path, clock: Clock):
        self.config_dir = config_dir
        self.clock = clock
        self.store: MemoryStore | None = None
        self.error: str | None = None
        self.skills: SkillsWatcher | None = None

    async def open(self, data_dir: Path, settings: Mapping[str, Any], services: HostServices) -> None:
        """Open the store into ``services`` and sync the skills; a store that cannot be used is reported."""
        retrieval = RetrievalSettings.from_host(settings)
        services.memory_limit, services.memory_scope = retrieval.limit, retrieval.scope
        try:
            self.store = await MemoryStore.open(memory_db_path(data_dir), clock=self.clock)
        except StoreError as exc:
            self.error = str(exc)
            services.memory_error = self.error
            logger.error(
                "memory: %s. The host runs without long-term memory, skills and /tools switches until this is "
                "fixed; the personas keep answering.",
                self.error,
            )
            return
        services.memory = self.store
        self.skills = SkillsWatcher(self.config_dir, self.store)
        await self.poll()

    async def poll(self) -> None:
        """Sync the skills folder when it changed (never raises: a failure is logged, the old skills stay)."""
        if self.skills is None:
            return
        try:
            await self.skills.poll()
        except (StoreError, OSError) as exc:
            logger.error("skills: could not sync the skills folder: %s", exc)

    async def aclose(self) -> None:
        """Close the store (idempotent)."""
        if self.store is not None:
            await self.store.aclose()
