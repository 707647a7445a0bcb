"""Ranked memory search: FTS5 BM25 over the query's words, then recency, with a bounded amount of scoring.

BM25 costs time per matching row, and a chat message always holds a few words found in most rows ("the",
"you"): scored naively, a search over 100,000 memories ranks nearly all of them. So the words are first
counted (a cheap doclist walk each), and the query keeps the rarest words while the rows they match stay
within ``CANDIDATE_BUDGET``, always keeping at least the rarest one. The words dropped are the commonest,
whose inverse document frequency, hence their weight in BM25, is the smallest: rows matching only those would
rank last anyway. Scores are compared at ``SCORE_PRECISION`` decimals so float noise between equally relevant
rows (tiny IDFs in a small table, slightly different lengths) does not hide the recency tie-break.

``SearchFilter.pending_reminders_only`` keeps a ``reminder`` only while its beat (``reminder_beat_id``) is in
the heartbeat table with a next run: a reminder still to come, not one already given or never scheduled.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ishiki_host.store.repos.memory_types import (
    MEMORY_COLUMNS,
    REMINDER_BEAT_PREFIX,
    Memory,
    MemoryHit,
    MemoryScope,
)
from ishiki_host.store.text import quote_terms

__all__ = ["CANDIDATE_BUDGET", "SCORE_PRECISION", "SearchFilter", "choose_terms", "filter_clause", "search"]

CANDIDATE_BUDGET = 5_000
SCORE_PRECISION = 4
_PENDING = (
    "(? = 0 OR m.type != 'reminder' OR EXISTS "
    "(SELECT 1 FROM heartbeat AS h WHERE h.id = ? || m.id AND h.next_run IS NOT NULL))"
)


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Which rows a search may return, and how many."""

    profile: str
    types: tuple[str, ...]
    readable: tuple[str, ...]
    exclude_session: int | None = None
    runtime_key: str | None = None
    limit: int = 20
    scope: MemoryScope | None = None
    pending_reminders_only: bool = False


def choose_terms(conn: sqlite3.Connection, terms: list[str], budget: int = CANDIDATE_BUDGET) -> list[str]:
    """The rarest of ``terms`` whose matching rows fit ``budget`` (at least one, if any matches at all)."""
    counted = sorted((_rows_matching(conn, term), position, term) for position, term in enumerate(terms))
    kept: list[str] = []
    total = 0
    for count, _, term in counted:
        if count == 0:
            continue
        if kept and total + count > budget:
            break
        kept.append(term)
        total += count
    return kept


def _rows_matching(conn: sqlite3.Connection, term: str) -> int:
    query = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?"
    return int(conn.execute(query, (quote_terms([term]),)).fetchone()[0])


def filter_clause(where: SearchFilter) -> tuple[str, tuple[object, ...]]:
    """The conditions of ``where`` on ``memories AS m`` and their parameters (shared with the vector search)."""
    types, readable = where.types, where.readable
    scoped, scope_params = where.scope.clause() if where.scope is not None else ("1", ())
    sql = (
        f"m.profile = ? AND m.type IN ({_marks(types)}) AND m.min_trust IN ({_marks(readable)}) "
        f"AND (? IS NULL OR m.session_id IS NOT ?) AND (? IS NULL OR m.runtime_key = ?) AND {scoped} AND {_PENDING}"
    )
    params = (where.profile, *types, *readable, where.exclude_session, where.exclude_session, where.runtime_key,
              where.runtime_key, *scope_params, int(where.pending_reminders_only), REMINDER_BEAT_PREFIX)  # fmt: skip
    return sql, params


def search(conn: sqlite3.Connection, terms: list[str], where: SearchFilter) -> list[MemoryHit]:
    """The best ``where.limit`` rows for ``terms``; runs in the database's worker thread."""
    kept = choose_terms(conn, terms)
    if not kept:
        return []
    conditions, params = filter_clause(where)
    # CROSS JOIN keeps the FTS index as the driving table: matching rows first, then the row filters.
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS}, f.rank FROM memories_fts AS f CROSS JOIN memories AS m ON m.id = f.rowid "
        f"WHERE memories_fts MATCH ? AND {conditions} "
        "ORDER BY round(f.rank, ?), m.created_at DESC, m.id DESC LIMIT ?",
        (quote_terms(kept), *params, SCORE_PRECISION, where.limit),
    )
    return [MemoryHit(Memory.from_row(row), float(row["rank"])) for row in rows]


def _marks(values: tuple[str, ...]) -> str:
    return ", ".join("?" * len(values))
