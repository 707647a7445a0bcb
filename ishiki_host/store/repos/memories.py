"""Long-term memories of a profile: add, list, search (FTS5 BM25, then recency), delete.

Every read takes the reader's trust level and returns only rows whose ``min_trust`` it reaches, so an
untrusted sender's turn never sees what was said in an owner-only exchange. There is no default for it on
purpose: each caller states who is reading.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from ishiki_host.core.tools import TRUST_ORDER
from ishiki_host.errors import StoreError
from ishiki_host.store.repos.memory_search import SearchFilter, filter_clause, search
from ishiki_host.store.repos.memory_types import (
    MAX_LIST,
    MAX_SEARCH,
    MEMORY_COLUMNS,
    MEMORY_TYPES,
    RETRIEVABLE_TYPES,
    Memory,
    MemoryDraft,
    MemoryHit,
    MemoryScope,
    MemoryType,
    readable_levels,
)
from ishiki_host.store.repos.remembered import Remembered
from ishiki_host.store.text import clean_text, index_text, query_terms

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.store.db import Database

__all__ = ["MemoriesRepo"]


def _validate(draft: MemoryDraft) -> MemoryDraft:
    if draft.type not in MEMORY_TYPES:
        raise StoreError(f"memory type {draft.type!r} is not one of {', '.join(MEMORY_TYPES)}")
    if draft.min_trust not in TRUST_ORDER:
        raise StoreError(f"memory min_trust {draft.min_trust!r} is not one of {', '.join(TRUST_ORDER)}")
    if not 0.0 <= draft.importance <= 1.0:
        raise StoreError(f"memory importance {draft.importance!r} is not between 0 and 1")
    if not draft.profile:
        raise StoreError("a memory needs the profile it belongs to")
    content = clean_text(draft.content).strip()
    if not content:
        raise StoreError("a memory cannot be empty")
    return dataclasses.replace(draft, content=content)


def _types(types: Collection[str] | None) -> list[str]:
    chosen = list(MEMORY_TYPES if types is None else dict.fromkeys(types))
    unknown = [t for t in chosen if t not in MEMORY_TYPES]
    if unknown:
        raise StoreError(f"memory type {unknown[0]!r} is not one of {', '.join(MEMORY_TYPES)}")
    return chosen


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))


def _insert(conn: sqlite3.Connection, drafts: Sequence[MemoryDraft], now: float) -> list[int]:
    ids = []
    for d in drafts:
        cursor = conn.execute(
            "INSERT INTO memories (type, content, search_text, profile, runtime_key, session_id, importance, "
            "min_trust, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (d.type, d.content, index_text(d.content), d.profile, d.runtime_key, d.session_id, d.importance,
             d.min_trust, now),
        )  # fmt: skip
        memory_id = int(cursor.lastrowid or 0)
        links = {("chat", v) for v in d.chats if v} | {("sender", v) for v in d.senders if v}
        conn.executemany(
            "INSERT INTO memory_links (memory_id, kind, value) VALUES (?, ?, ?)",
            [(memory_id, kind, value) for kind, value in sorted(links)],
        )
        ids.append(memory_id)
    return ids


def _get(conn: sqlite3.Connection, memory_id: int) -> Memory | None:
    row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories AS m WHERE m.id = ?", (memory_id,)).fetchone()
    return Memory.from_row(row) if row else None


class MemoriesRepo:
    """The ``memories`` table and its FTS5 index.

    ``has_any(profile)`` is answered from memory after its first query (every turn asks it before searching;
    writes through this repository keep it current).
    """

    def __init__(self, db: Database, clock: Clock):
        self._db = db
        self._clock = clock
        self._any: Remembered[str, bool] = Remembered()

    async def add(
        self,
        type: MemoryType,
        content: str,
        *,
        profile: str,
        runtime_key: str,
        session_id: int | None = None,
        importance: float = 0.5,
        min_trust: TrustLevel = "owner",
        chats: Collection[str] = (),
        senders: Collection[str] = (),
    ) -> Memory:
        """Store one memory and return it; ``StoreError`` on an unknown type, empty content, bad importance.
        ``chats`` and ``senders``: where it was made and whom it involves (``MemoryScope``)."""
        draft = _validate(
            MemoryDraft(
                type, content, profile, runtime_key, session_id, importance, min_trust, tuple(chats), tuple(senders)
            )
        )
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> Memory:
            memory = _get(conn, _insert(conn, [draft], now)[0])
            assert memory is not None  # inserted just above, in this transaction
            return memory

        memory = await self._db.write(run)
        self._written(draft.profile)
        return memory

    async def add_many(self, drafts: Sequence[MemoryDraft]) -> list[int]:
        """Store many memories in one transaction (all or none); returns their ids in order."""
        valid = [_validate(d) for d in drafts]
        now = self._clock.now()
        ids = await self._db.write(lambda conn: _insert(conn, valid, now))
        for draft in valid:
            self._written(draft.profile)
        return ids

    def _written(self, profile: str | None) -> None:
        if profile is None:
            self._any.forget()
        else:
            self._any.learn(profile, True)

    async def has_any(self, profile: str) -> bool:
        """Whether the profile has any memory at all (remembered; see the class docstring)."""

        async def read() -> bool:
            return await self.count(profile) > 0

        return await self._any.get(profile, read)

    async def get(self, memory_id: int) -> Memory | None:
        """The memory with that id, if it exists (no trust filter: for the code that wrote it)."""
        return await self._db.read(lambda conn: _get(conn, memory_id))

    async def latest(
        self,
        profile: str,
        *,
        trust: TrustLevel,
        types: Collection[MemoryType] | None = None,
        count: int = 10,
        scope: MemoryScope | None = None,
    ) -> list[Memory]:
        """The newest memories of a profile readable at ``trust`` (and within ``scope``, when given); ``count``
        is clamped to 1..``MAX_LIST``."""
        chosen, readable = _types(types), readable_levels(trust)
        limit = min(max(1, count), MAX_LIST)
        scoped, scope_params = scope.clause() if scope is not None else ("1", ())

        def run(conn: sqlite3.Connection) -> list[Memory]:
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories AS m WHERE m.profile = ? AND m.type IN ({_marks(chosen)}) "
                f"AND m.min_trust IN ({_marks(readable)}) AND {scoped} ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
                (profile, *chosen, *readable, *scope_params, limit),
            )
            return [Memory.from_row(row) for row in rows]

        return await self._db.read(run)

    async def search(
        self,
        profile: str,
        text: str,
        *,
        trust: TrustLevel,
        limit: int = 20,
        exclude_session_id: int | None = None,
        types: Collection[MemoryType] = RETRIEVABLE_TYPES,
        runtime_key: str | None = None,
        scope: MemoryScope | None = None,
        pending_reminders_only: bool = False,
    ) -> list[MemoryHit]:
        """The memories most relevant to ``text``: BM25 over its words, then newest first among equals.

        Any text is safe (see ``ishiki_host.store.text``); text without a word returns ``[]``. By default
        reminders are left out; ``exclude_session_id`` leaves out the current session's rows; ``runtime_key``
        keeps only one runtime's rows; ``scope`` only the memories of the reader's chats and people
        (``MemoryScope``); ``pending_reminders_only`` keeps a reminder only while its beat
        (``reminder_beat_id``) is scheduled. ``limit`` is clamped to 1..``MAX_SEARCH``.
        """
        where = self.search_filter(
            profile,
            trust=trust,
            limit=limit,
            exclude_session_id=exclude_session_id,
            types=types,
            runtime_key=runtime_key,
            scope=scope,
            pending_reminders_only=pending_reminders_only,
        )
        return await self.search_where(text, where)

    async def search_where(self, text: str, where: SearchFilter) -> list[MemoryHit]:
        """``search`` with its filter made already (``search_filter``)."""
        terms = query_terms(text)
        if not terms or not where.types:
            return []
        return await self._db.read(lambda conn: search(conn, terms, where))

    def search_filter(
        self,
        profile: str,
        *,
        trust: TrustLevel,
        limit: int = 20,
        exclude_session_id: int | None = None,
        types: Collection[MemoryType] = RETRIEVABLE_TYPES,
        runtime_key: str | None = None,
        scope: MemoryScope | None = None,
        pending_reminders_only: bool = False,
    ) -> SearchFilter:
        """The rows a search with these arguments may return (``search``'s), for another index to apply
        (``MemoryVectorIndex.nearest``); ``StoreError`` on an unknown trust level or type."""
        return SearchFilter(
            profile,
            tuple(_types(types)),
            tuple(readable_levels(trust)),
            exclude_session_id,
            runtime_key,
            min(max(1, limit), MAX_SEARCH),
            scope,
            pending_reminders_only,
        )

    async def visible(self, memory_id: int, where: SearchFilter) -> Memory | None:
        """The memory with that id if ``where`` lets a reader see it (``search_filter``), else ``None``: a
        memory the reader may not see and one that does not exist look the same."""
        conditions, params = filter_clause(where)

        def run(conn: sqlite3.Connection) -> Memory | None:
            sql = f"SELECT {MEMORY_COLUMNS} FROM memories AS m WHERE m.id = ? AND {conditions}"
            row = conn.execute(sql, (memory_id, *params)).fetchone()
            return Memory.from_row(row) if row else None

        return await self._db.read(run)

    async def senders(self, memory_id: int) -> list[str]:
        """The senders (``platform:userId``) a memory involves: whom it is about."""

        def run(conn: sqlite3.Connection) -> list[str]:
            sql = "SELECT value FROM memory_links WHERE memory_id = ? AND kind = 'sender' ORDER BY value"
            return [str(row[0]) for row in conn.execute(sql, (memory_id,))]

        return await self._db.read(run)

    async def count(self, profile: str, *, types: Collection[MemoryType] | None = None) -> int:
        """How many memories a profile has (of ``types``, all by default), whatever their trust level."""
        chosen = _types(types)

        def run(conn: sqlite3.Connection) -> int:
            sql = f"SELECT count(*) FROM memories WHERE profile = ? AND type IN ({_marks(chosen)})"
            return int(conn.execute(sql, (profile, *chosen)).fetchone()[0])

        return await self._db.read(run)

    async def delete(self, memory_id: int) -> bool:
        """Delete one memory (and its index entry); whether it existed."""
        deleted = await self._db.write(
            lambda conn: conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,)).rowcount > 0
        )
        self._written(None)
        return deleted
