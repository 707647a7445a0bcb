"""``MemoryStore``: the memory database and its repositories, as one async object.

One store per data directory, opened by whoever owns the host's lifetime and shared by the built-in extensions
(memory, skills, heartbeat) and the commands; the repositories serialize through its one connection.

    async with await MemoryStore.open(data_dir / "memory.db", clock=clock) as store:
        hits = await store.memories.search("alice", "tea", trust="owner")
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from ishiki_host.core.clock import SystemClock
from ishiki_host.errors import StoreError
from ishiki_host.store.db import Database
from ishiki_host.store.repos.heartbeats import HeartbeatRepo
from ishiki_host.store.repos.images import ImagesRepo
from ishiki_host.store.repos.memories import MemoriesRepo
from ishiki_host.store.repos.memory_vectors import MemoryVectorsRepo
from ishiki_host.store.repos.pairing import PairingRepo
from ishiki_host.store.repos.people import PeopleRepo
from ishiki_host.store.repos.plugin_settings import PluginSettingsRepo
from ishiki_host.store.repos.sessions import SessionsRepo
from ishiki_host.store.repos.skills import LearnedSkillsRepo
from ishiki_host.store.repos.usage import UsageRepo

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock

__all__ = ["MemoryStore"]

logger = logging.getLogger("ishiki_host.store")


class MemoryStore:
    """The memory database: sessions, memories (and their embeddings, ``vectors``), the profiles of people
    (``people``), images, learned skills, heartbeats, plugin settings, usage, DM pairing."""

    def __init__(self, db: Database, clock: Clock):
        self.db = db
        self.clock = clock
        self.sessions = SessionsRepo(db, clock)
        self.memories = MemoriesRepo(db, clock)
        self.vectors = MemoryVectorsRepo(db, clock)
        self.people = PeopleRepo(db, clock)
        self.images = ImagesRepo(db, clock)
        self.skills = LearnedSkillsRepo(db, clock)
        self.heartbeats = HeartbeatRepo(db, clock)
        self.plugin_settings = PluginSettingsRepo(db, clock)
        self.usage = UsageRepo(db)
        self.pairing = PairingRepo(db, clock)

    @classmethod
    async def open(cls, path: str | Path, *, clock: Clock | None = None, check: bool = True) -> MemoryStore:
        """Open (check, WAL, migrate) the database file at ``path``; ``StoreError`` if it cannot be used."""
        return cls(await Database.open(path, check=check), clock or SystemClock())

    @property
    def path(self) -> Path:
        """The database file."""
        return self.db.path

    async def integrity_problems(self) -> list[str]:
        """What ``PRAGMA integrity_check`` and the FTS index check report; empty when healthy."""
        return await self.db.integrity_problems()

    async def aclose(self) -> None:
        """Write the usage counts still in memory, then close the database (idempotent)."""
        if not self.db.closed:
            try:
                await self.usage.flush()
            except StoreError as exc:  # the counts of the last seconds are lost; the close must still happen
                logger.error("usage: could not write the last counts: %s", exc)
        await self.db.aclose()

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
