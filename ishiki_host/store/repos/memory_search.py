"""Ranked memory search: FTS5 BM25 over the query's words, then recency, with a bounded amount of work.

BM25 costs time per matching row, and a chat message always holds a few words found in most rows ("the",
"you"): scored naively, a search over 100,000 memories ranks nearly all of them. So the words are first
counted, each count stopping past ``CANDIDATE_BUDGET`` (a common word costs no more than a rare one), and the
query keeps the rarest words while the rows they match stay within the budget, always keeping at least one
(when every count stopped, the word rarest among the newest rows). The words dropped are the commonest, whose inverse
document frequency, hence their weight in BM25, is the smallest: rows matching only those would rank last
anyway. When even the word kept matches more than the budget (every word of the query is common), only its
newest ``CANDIDATE_BUDGET`` matches are ranked, a window widened fourfold while fewer rows than asked pass
the filter, up to the whole table; BM25 still counts that word's rows once for its weight (FTS5, in C).
Scores are compared at ``SCORE_PRECISION`` decimals so float noise between equally relevant rows (tiny IDFs
in a small table, slightly different lengths) does not hide the recency tie-break.

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

CANDIDATE_BUDGET = 200
SCORE_PRECISION = 4
_SAMPLE = 8  # when every word is over the budget, the rarest is judged on the newest _SAMPLE x budget rows
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
    """The rarest of ``terms`` whose matching rows fit ``budget`` (at least one, if any matches at all: see the
    module docstring)."""
    return [term for term, _ in _chosen(conn, terms, budget)]


def _chosen(conn: sqlite3.Connection, terms: list[str], budget: int) -> list[tuple[str, int]]:
    """``choose_terms`` with each term's count (a count above ``budget`` is ``budget + 1``)."""
    counted = sorted((_rows_matching(conn, term, budget + 1), position, term) for position, term in enumerate(terms))
    if counted and counted[0][0] > budget:  # every word over the budget: the rarest among the newest rows
        since = _newest_rowid(conn) - _SAMPLE * budget
        _, _, rarest = min((_rows_matching(conn, term, -1, since), position, term) for _, position, term in counted)
        return [(rarest, budget + 1)]
    kept: list[tuple[str, int]] = []
    total = 0
    for count, _, term in counted:
        if count == 0:
            continue
        if kept and total + count > budget:
            break
        kept.append((term, count))
        total += count
    return kept


def _rows_matching(conn: sqlite3.Connection, term: str, cap: int, since: int = 0) -> int:
    """How many rows above rowid ``since`` match ``term``, counted up to ``cap`` (-1: all)."""
    query = "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? AND rowid > ? LIMIT ?)"
    return int(conn.execute(query, (quote_terms([term]), since, cap)).fetchone()[0])


def _newest_rowid(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0])


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
    kept = _chosen(conn, terms, CANDIDATE_BUDGET)
    if not kept:
        return []
    match = quote_terms([term for term, _ in kept])
    if sum(count for _, count in kept) <= CANDIDATE_BUDGET:
        return _ranked(conn, match, where, 0)
    window = CANDIDATE_BUDGET
    while True:  # every word is common: rank the newest matches (see the module docstring)
        floor = _window_floor(conn, match, window)
        hits = _ranked(conn, match, where, floor)
        if floor == 0 or len(hits) >= where.limit:
            return hits
        window *= 4


def _window_floor(conn: sqlite3.Connection, match: str, window: int) -> int:
    """The lowest rowid of the newest ``window`` rows matching ``match``; 0 when fewer match."""
    sql = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?"
    row = conn.execute(sql, (match, window - 1)).fetchone()
    return int(row[0]) if row else 0


def _ranked(conn: sqlite3.Connection, match: str, where: SearchFilter, floor: int) -> list[MemoryHit]:
    """The best ``where.limit`` rows matching ``match`` from rowid ``floor`` on that ``where`` lets through."""
    conditions, params = filter_clause(where)
    # CROSS JOIN keeps the FTS index as the driving table: matching rows first, then the row filters.
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS}, f.rank FROM memories_fts AS f CROSS JOIN memories AS m ON m.id = f.rowid "
        f"WHERE memories_fts MATCH ? AND f.rowid >= ? AND {conditions} "
        "ORDER BY round(f.rank, ?), m.created_at DESC, m.id DESC LIMIT ?",
        (match, floor, *params, SCORE_PRECISION, where.limit),
    )
    return [MemoryHit(Memory.from_row(row), float(row["rank"])) for row in rows]


def _marks(values: tuple[str, ...]) -> str:
    return ", ".join("?" * len(values))
