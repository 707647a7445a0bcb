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
- The vectors are a rowid table keyed by the memory's id. A query's candidates come from the hash index, and
  are scored against the (model, profile)'s vectors held in memory (``VectorMatrix``): loaded by the first
  query, then kept in step by ``put`` and ``prune``. A memory deleted since (by any connection) keeps its row
  there, but a hit must still have its vector of the model in the table, so it is never returned.
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
    VectorMatrix,
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
_BEST = 8  # candidates ordered first, times the limit: the rest only when the filter leaves too few of them


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

    The number of vectors per (model, profile), which sets how narrow a query's buckets are, and the vectors
    themselves (``VectorMatrix``) are kept in memory after their first read and updated by the writes made
    through this repository. The matrices are used in the database's worker thread only.
    """

    def __init__(self, db: Database, clock: Clock):
        self._db = db
        self._clock = clock
        self._rows: dict[tuple[str, str], int] = {}
        self._matrices: dict[tuple[str, str], VectorMatrix] = {}

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
            stored = []
            for memory_id, vector in prepared:
                if expected is None:
                    expected = len(vector)
                if len(vector) != expected or not vector:
                    raise StoreError(
                        f"memory {memory_id}: the embedding from {model} has {len(vector)} dimensions, but its "
                        f"other embeddings have {expected}; nothing of this batch was stored"
                    )
                if _put_one(conn, profile, model, memory_id, vector, now):
                    stored.append((memory_id, vector))
            self._follow(profile, model, stored)
            return len(stored)

        try:
            stored = await self._db.write(run)
        except BaseException:
            self._drop_matrices(profile)  # the matrices may hold what the failed transaction did not store
            raise
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
            matrix = self._matrix(conn, model, where.profile, expected)
            best = _BEST * where.limit
            hits = _readable(conn, model, matrix.scores(ids, query, best), where)
            if len(hits) < where.limit and len(ids) > best:  # the filter left too few of the best: all of them
                hits = _readable(conn, model, matrix.scores(ids, query), where)
            return hits

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
        for key in [k for k in self._matrices if k[1] == profile and k[0] != keep_model]:
            del self._matrices[key]
        return removed

    def forget_counts(self) -> None:
        """Count the vectors again on next need (memories were deleted: their vectors went with them)."""
        self._rows.clear()

    def _matrix(self, conn: sqlite3.Connection, model: str, profile: str, dimensions: int) -> VectorMatrix:
        """The in-memory vectors of (model, profile), read from the table on first need."""
        key = (model, profile)
        matrix = self._matrices.get(key)
        if matrix is None or matrix.dimensions != dimensions:
            plain = conn.cursor()
            plain.row_factory = None
            rows = plain.execute(
                "SELECT memory_id, vector FROM memory_vectors WHERE model = ? AND profile = ? AND dimensions = ?",
                (model, profile, dimensions),
            )
            matrix = self._matrices[key] = VectorMatrix(dimensions, rows)
        return matrix

    def _follow(self, profile: str, model: str, stored: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Bring the loaded matrices in step with vectors just stored (in the write's worker thread)."""
        for (other, owner), matrix in list(self._matrices.items()):
            if owner != profile:
                continue
            if other != model:
                for memory_id, _ in stored:  # a memory has one vector: the new model's replaced this one
                    matrix.discard(memory_id)
            elif stored and matrix.dimensions != len(stored[0][1]):
                del self._matrices[(other, owner)]
            else:
                for memory_id, vector in stored:
                    matrix.put(memory_id, vector)

    def _drop_matrices(self, profile: str) -> None:
        for key in [k for k in self._matrices if k[1] == profile]:
            del self._matrices[key]

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
    plain = conn.cursor()
    plain.row_factory = None  # tuples: a third cheaper than sqlite3.Row for thousands of rows
    for band, signature in probes(query, bits) if bits else enumerate(signatures(query)[:1]):
        low, high = prefix_range(signature, bits)
        rows = plain.execute(
            "SELECT memory_id FROM memory_vector_bands WHERE model = ? AND profile = ? AND band = ? "
            "AND signature BETWEEN ? AND ? LIMIT ?",
            (model, profile, band, low, high, cap),
        )
        found.update(memory_id for (memory_id,) in rows)
    return found


def _readable(
    conn: sqlite3.Connection, model: str, scored: list[tuple[float, int]], where: SearchFilter
) -> list[VectorHit]:
    """The nearest of ``scored`` (``(similarity, id)``, nearest first) that ``where`` lets through and that
    still have their vector of ``model``, at most ``where.limit``: read a little more than the limit first,
    twice as many each time after while the filter leaves too few."""
    similarity = {memory_id: score for score, memory_id in scored}
    conditions, params = filter_clause(where)
    hits: list[VectorHit] = []
    start, step = 0, where.limit + 5
    while start < len(scored) and len(hits) < where.limit:
        chunk = [memory_id for _, memory_id in scored[start : start + step]]
        rows = conn.execute(  # NOT INDEXED: rows read by id, never by walking an index of the profile's rows
            f"SELECT {MEMORY_COLUMNS} FROM memories AS m NOT INDEXED WHERE m.id IN ({_marks(chunk)}) "
            f"AND {conditions} AND EXISTS (SELECT 1 FROM memory_vectors AS v WHERE v.memory_id = m.id "
            "AND +v.model = ?)",
            (*chunk, *params, model),
        )
        hits += [VectorHit(memory, similarity[memory.id]) for memory in map(Memory.from_row, rows)]
        start, step = start + step, min(2 * step, 500)  # 500: well within SQLite's parameter limit
    hits.sort(key=lambda hit: (-hit.similarity, -hit.memory.created_at, -hit.memory.id))
    return hits[: where.limit]


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))
