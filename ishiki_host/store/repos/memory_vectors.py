"""The embeddings of memories (``memory_vectors``) and their hash index (``memory_vector_bands``), on SQLite.

``MemoryVectorIndex`` is what the memory layer needs of a vector store (the seam another database
implements: PostgreSQL with pgvector); ``MemoryVectorsRepo`` is the SQLite one, with the index of
``ishiki_host.store.vectors``.

- A memory has one vector, of the ``model`` (the ``provider:modelId`` ref) that embedded it last; a query
  compares only vectors of its own model. Changing the embeddings model makes every memory pending for the
  new one, and embedding it replaces the old vector; ``prune`` deletes what is left of other models.
- The first vector stored for a model fixes its length. A vector of another length is refused with a
  ``StoreError`` naming the memory, the model and both lengths, and nothing of its batch is written.
- Deleting a memory deletes its vector and index rows (foreign keys, ``ON DELETE CASCADE``).
- The vectors are a rowid table keyed by the memory's id: a candidate's vector is one b-tree lookup.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ishiki_host.errors import StoreError
from ishiki_host.store.repos.memory_search import SearchFilter, filter_clause
from ishiki_host.store.repos.memory_types import MEMORY_COLUMNS, Memory
from ishiki_host.store.vectors import (
    TARGET,
    decode,
    dot,
    encode,
    normalized,
    prefix_bits,
    prefix_range,
    probes,
    signatures,
)

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.store.db import Database

__all__ = ["MemoryVectorIndex", "MemoryVectorsRepo", "PendingMemory", "VectorCounts", "VectorHit"]

_PER_BAND = 2  # a probe reads at most this many times its target of rows, however skewed the signatures


@dataclass(frozen=True, slots=True)
class PendingMemory:
    """A memory still to be embedded with some model: its id and text."""

    id: int
    content: str


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A vector search result: the memory and its cosine similarity to the query (higher is nearer)."""

    memory: Memory
    similarity: float


@dataclass(frozen=True, slots=True)
class VectorCounts:
    """How many of a profile's memories have a vector of a model, and how many do not yet."""

    embedded: int
    pending: int


class MemoryVectorIndex(Protocol):
    """The vector store the memory layer uses (see the module docstring)."""

    async def pending(self, profile: str, model: str, *, after: int = 0, limit: int = 32) -> list[PendingMemory]:
        """Memories of ``profile`` with id above ``after`` and no vector of ``model``, oldest first."""
        ...

    async def put(self, profile: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> int:
        """Store ``(memory id, vector)`` pairs of ``model`` in one transaction; how many were stored."""
        ...

    async def nearest(self, model: str, vector: Sequence[float], where: SearchFilter) -> list[VectorHit]:
        """The ``where.limit`` memories nearest ``vector`` that ``where`` lets through, nearest first."""
        ...

    async def has(self, model: str, memory_id: int) -> bool:
        """Whether memory ``memory_id`` has a vector of ``model``."""
        ...

    async def counts(self, profile: str, model: str) -> VectorCounts:
        """Embedded and pending memories of ``profile`` for ``model``."""
        ...

    async def prune(self, profile: str, keep_model: str) -> int:
        """Delete ``profile``'s vectors of every other model; how many memories' vectors went."""
        ...


class MemoryVectorsRepo:
    """``MemoryVectorIndex`` on the memory database (see the module docstring).

    The number of vectors per (model, profile), which sets how narrow a query's buckets are, is kept in memory
    after its first count and updated by the writes made through this repository.
    """

    def __init__(self, db: Database, clock: Clock):
        self._db = db
        self._clock = clock
        self._rows: dict[tuple[str, str], int] = {}

    async def pending(self, profile: str, model: str, *, after: int = 0, limit: int = 32) -> list[PendingMemory]:
        """Memories of ``profile`` with id above ``after`` and no vector of ``model``, oldest first."""

        def run(conn: sqlite3.Connection) -> list[PendingMemory]:
            # +m.profile: walk the table by id from ``after`` (a range of the rowid), not the profile's index.
            rows = conn.execute(
                "SELECT m.id, m.content FROM memories AS m WHERE m.id > ? AND +m.profile = ? AND NOT EXISTS "
                "(SELECT 1 FROM memory_vectors AS v WHERE v.memory_id = m.id AND v.model = ?) ORDER BY m.id LIMIT ?",
                (after, profile, model, max(1, limit)),
            )
            return [PendingMemory(int(row[0]), str(row[1])) for row in rows]

        return await self._db.read(run)

    async def put(self, profile: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> int:
        """Store the vectors of ``model`` for memories of ``profile`` (all or none; see the module docstring).
        A memory deleted meanwhile is skipped."""
        prepared = [(memory_id, normalized(vector)) for memory_id, vector in vectors]
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> int:
            expected = _dimensions(conn, model)
            stored = 0
            for memory_id, vector in prepared:
                if expected is None:
                    expected = len(vector)
                if len(vector) != expected or not vector:
                    raise StoreError(
                        f"memory {memory_id}: the embedding from {model} has {len(vector)} dimensions, but its "
                        f"other embeddings have {expected}; nothing of this batch was stored"
                    )
                stored += _put_one(conn, profile, model, memory_id, vector, now)
            return stored

        stored = await self._db.write(run)
        key = (model, profile)
        if key in self._rows:
            self._rows[key] += stored
        return stored

    async def nearest(self, model: str, vector: Sequence[float], where: SearchFilter) -> list[VectorHit]:
        """The ``where.limit`` readable memories nearest ``vector`` among the index's candidates."""
        query = normalized(vector)
        rows = await self._row_count(model, where.profile)

        def run(conn: sqlite3.Connection) -> list[VectorHit]:
            expected = _dimensions(conn, model)
            if expected is None or rows == 0:
                return []
            if len(query) != expected:
                raise StoreError(
                    f"the query embedding from {model} has {len(query)} dimensions, its memories' have {expected}"
                )
            ids = _candidates(conn, model, where.profile, query, prefix_bits(rows))
            return _ranked(conn, model, query, sorted(ids), where)

        return await self._db.read(run)

    async def has(self, model: str, memory_id: int) -> bool:
        """Whether memory ``memory_id`` has a vector of ``model``."""
        sql = "SELECT 1 FROM memory_vectors WHERE memory_id = ? AND model = ?"
        return await self._db.read(lambda conn: conn.execute(sql, (memory_id, model)).fetchone() is not None)

    async def counts(self, profile: str, model: str) -> VectorCounts:
        """Embedded and pending memories of ``profile`` for ``model``."""

        def run(conn: sqlite3.Connection) -> tuple[int, int]:
            total = conn.execute("SELECT count(*) FROM memories WHERE profile = ?", (profile,)).fetchone()[0]
            embedded = conn.execute(
                "SELECT count(*) FROM memory_vectors WHERE model = ? AND profile = ?", (model, profile)
            ).fetchone()[0]
            return int(total), int(embedded)

        total, embedded = await self._db.read(run)
        self._rows[(model, profile)] = embedded
        return VectorCounts(embedded, max(0, total - embedded))

    async def prune(self, profile: str, keep_model: str) -> int:
        """Delete ``profile``'s vectors and index rows of every model but ``keep_model``."""

        def run(conn: sqlite3.Connection) -> int:
            conn.execute("DELETE FROM memory_vector_bands WHERE profile = ? AND model != ?", (profile, keep_model))
            sql = "DELETE FROM memory_vectors WHERE profile = ? AND model != ?"
            return int(conn.execute(sql, (profile, keep_model)).rowcount)

        removed = await self._db.write(run)
        for key in [k for k in self._rows if k[1] == profile and k[0] != keep_model]:
            del self._rows[key]
        return removed

    def forget_counts(self) -> None:
        """Count the vectors again on next need (memories were deleted: their vectors went with them)."""
        self._rows.clear()

    async def _row_count(self, model: str, profile: str) -> int:
        key = (model, profile)
        if key not in self._rows:
            sql = "SELECT count(*) FROM memory_vectors WHERE model = ? AND profile = ?"
            self._rows[key] = int(await self._db.read(lambda conn: conn.execute(sql, (model, profile)).fetchone()[0]))
        return self._rows[key]


def _dimensions(conn: sqlite3.Connection, model: str) -> int | None:
    row = conn.execute("SELECT dimensions FROM memory_vectors WHERE model = ? LIMIT 1", (model,)).fetchone()
    return int(row[0]) if row else None


def _put_one(
    conn: sqlite3.Connection, profile: str, model: str, memory_id: int, vector: list[float], now: float
) -> int:
    """Store one vector and its signatures; 0 when the memory is gone (or belongs to another profile)."""
    owner = conn.execute("SELECT profile FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if owner is None or owner[0] != profile:
        return 0
    conn.execute("DELETE FROM memory_vector_bands WHERE memory_id = ?", (memory_id,))  # of any model
    conn.execute(
        "INSERT OR REPLACE INTO memory_vectors (model, memory_id, profile, dimensions, vector, embedded_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (model, memory_id, profile, len(vector), encode(vector), now),
    )
    conn.executemany(
        "INSERT INTO memory_vector_bands (model, profile, band, signature, memory_id) VALUES (?, ?, ?, ?, ?)",
        [(model, profile, band, signature, memory_id) for band, signature in enumerate(signatures(vector))],
    )
    return 1


def _candidates(conn: sqlite3.Connection, model: str, profile: str, query: list[float], bits: int) -> set[int]:
    """The ids sharing ``bits`` leading signature bits with one of the query's ``probes``."""
    found: set[int] = set()
    cap = -1 if bits == 0 else _PER_BAND * TARGET
    for band, signature in probes(query, bits) if bits else enumerate(signatures(query)[:1]):
        low, high = prefix_range(signature, bits)
        rows = conn.execute(
            "SELECT memory_id FROM memory_vector_bands WHERE model = ? AND profile = ? AND band = ? "
            "AND signature BETWEEN ? AND ? LIMIT ?",
            (model, profile, band, low, high, cap),
        )
        found.update(int(row[0]) for row in rows)
    return found


def _ranked(
    conn: sqlite3.Connection, model: str, query: list[float], ids: list[int], where: SearchFilter
) -> list[VectorHit]:
    """The nearest candidates ``where`` lets through, at most ``where.limit``: scored first (a vector read by
    its key is cheap), filtered after, nearest first, a few times the limit at a time."""
    scored: list[tuple[float, int]] = []
    plain = conn.cursor()
    plain.row_factory = None  # tuples: a third cheaper than sqlite3.Row for thousands of rows
    for start in range(0, len(ids), 500):  # SQLite's parameter limit
        chunk = ids[start : start + 500]
        rows = plain.execute(
            f"SELECT memory_id, vector FROM memory_vectors WHERE memory_id IN ({_marks(chunk)}) AND model = ?",
            (*chunk, model),
        )
        scored += [(dot(query, decode(blob)), memory_id) for memory_id, blob in rows]
    scored.sort(key=lambda pair: (-pair[0], -pair[1]))
    similarity = {memory_id: score for score, memory_id in scored}
    conditions, params = filter_clause(where)
    hits: list[VectorHit] = []
    step = max(4 * where.limit, 20)
    for start in range(0, len(scored), step):
        chunk = [memory_id for _, memory_id in scored[start : start + step]]
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories AS m WHERE m.id IN ({_marks(chunk)}) AND {conditions}",
            (*chunk, *params),
        )
        hits += [VectorHit(memory, similarity[memory.id]) for memory in map(Memory.from_row, rows)]
        if len(hits) >= where.limit:
            break
    hits.sort(key=lambda hit: (-hit.similarity, -hit.memory.created_at, -hit.memory.id))
    return hits[: where.limit]


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))
