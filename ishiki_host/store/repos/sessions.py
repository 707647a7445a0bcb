"""Sessions: the segments of a runtime's fact log, one open at a time per runtime.

A session starts at a fact id (``start_fact_id``) and, once closed, ends at one (``end_fact_id``, inclusive).
``/clear`` and ``/compact`` close the open session and open the next one in one transaction (``rotate``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_host.errors import StoreError

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.store.db import Database

__all__ = ["Session", "SessionsRepo"]

_COLUMNS = "id, runtime_key, start_fact_id, end_fact_id, start_reason, end_reason, summary, created_at, ended_at"


@dataclass(frozen=True, slots=True)
class Session:
    """One session row. ``summary`` is the text carried into it (``/compact``'s seed), if any."""

    id: int
    runtime_key: str
    start_fact_id: int
    end_fact_id: int | None
    start_reason: str
    end_reason: str | None
    summary: str | None
    created_at: float
    ended_at: float | None

    @property
    def is_open(self) -> bool:
        """Whether the session has not ended yet."""
        return self.ended_at is None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Session:
        """Build from a row selected with the repository's column list."""
        return cls(*(row[i] for i in range(9)))


def _current(conn: sqlite3.Connection, runtime_key: str) -> Session | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM sessions WHERE runtime_key = ? AND ended_at IS NULL", (runtime_key,)
    ).fetchone()
    return Session.from_row(row) if row else None


def _get(conn: sqlite3.Connection, session_id: int) -> Session:
    row = conn.execute(f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise StoreError(f"no session with id {session_id}")
    return Session.from_row(row)


def _insert(
    conn: sqlite3.Connection, runtime_key: str, start_fact_id: int, reason: str, summary: str | None, now: float
) -> Session:
    if _current(conn, runtime_key) is not None:
        raise StoreError(f"runtime {runtime_key!r} already has an open session; close or rotate it first")
    cursor = conn.execute(
        "INSERT INTO sessions (runtime_key, start_fact_id, start_reason, summary, created_at) VALUES (?, ?, ?, ?, ?)",
        (runtime_key, start_fact_id, reason, summary, now),
    )
    return _get(conn, int(cursor.lastrowid or 0))


def _close(conn: sqlite3.Connection, runtime_key: str, end_fact_id: int, reason: str, now: float) -> Session:
    current = _current(conn, runtime_key)
    if current is None:
        raise StoreError(f"runtime {runtime_key!r} has no open session to close")
    if end_fact_id < current.start_fact_id - 1:
        raise StoreError(
            f"session {current.id} of {runtime_key!r} starts at fact {current.start_fact_id}; "
            f"it cannot end at fact {end_fact_id}"
        )
    conn.execute(
        "UPDATE sessions SET end_fact_id = ?, end_reason = ?, ended_at = ? WHERE id = ?",
        (end_fact_id, reason, now, current.id),
    )
    return _get(conn, current.id)


class SessionsRepo:
    """Open, close, rotate and look up sessions."""

    def __init__(self, db: Database, clock: Clock):
        self._db = db
        self._clock = clock

    async def current(self, runtime_key: str) -> Session | None:
        """The open session of a runtime, if any."""
        return await self._db.read(lambda conn: _current(conn, runtime_key))

    async def get(self, session_id: int) -> Session:
        """The session with that id; ``StoreError`` if there is none."""
        return await self._db.read(lambda conn: _get(conn, session_id))

    async def open(
        self, runtime_key: str, *, start_fact_id: int, reason: str = "start", summary: str | None = None
    ) -> Session:
        """Open a session; ``StoreError`` if the runtime already has an open one."""
        now = self._clock.now()
        return await self._db.write(lambda conn: _insert(conn, runtime_key, start_fact_id, reason, summary, now))

    async def ensure(self, runtime_key: str, *, start_fact_id: int, reason: str = "start") -> Session:
        """The open session of a runtime, opening one at ``start_fact_id`` when there is none."""
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> Session:
            return _current(conn, runtime_key) or _insert(conn, runtime_key, start_fact_id, reason, None, now)

        return await self._db.write(run)

    async def align(
        self, runtime_key: str, *, start_fact_id: int, reason: str = "start", summary: str | None = None
    ) -> tuple[Session, Session | None]:
        """The open session starting at ``start_fact_id``, in one transaction; returns ``(open, closed)``.

        An open session already starting there is kept (``closed`` is ``None``); another open one is closed
        just before ``start_fact_id`` (or where it began) and a new one is opened with ``reason`` and
        ``summary``.
        """
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> tuple[Session, Session | None]:
            current = _current(conn, runtime_key)
            if current is not None and current.start_fact_id == start_fact_id:
                return current, None
            closed = None
            if current is not None:
                end = max(start_fact_id - 1, current.start_fact_id - 1)
                closed = _close(conn, runtime_key, end, reason, now)
            return _insert(conn, runtime_key, start_fact_id, reason, summary, now), closed

        return await self._db.write(run)

    async def close(self, runtime_key: str, *, end_fact_id: int, reason: str) -> Session:
        """End the open session at ``end_fact_id`` (inclusive); ``StoreError`` if none is open."""
        now = self._clock.now()
        return await self._db.write(lambda conn: _close(conn, runtime_key, end_fact_id, reason, now))

    async def rotate(
        self, runtime_key: str, *, end_fact_id: int, start_fact_id: int, reason: str, summary: str | None = None
    ) -> tuple[Session | None, Session]:
        """Close the open session (if any) and open the next, atomically; returns ``(closed, opened)``.

        ``reason`` is both the end reason of the old session and the start reason of the new one
        (``clear``, ``compact``, ...); ``summary`` seeds the new session.
        """
        if start_fact_id <= end_fact_id:
            raise StoreError(f"the next session must start after fact {end_fact_id}, not at {start_fact_id}")
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> tuple[Session | None, Session]:
            closed = _close(conn, runtime_key, end_fact_id, reason, now) if _current(conn, runtime_key) else None
            return closed, _insert(conn, runtime_key, start_fact_id, reason, summary, now)

        return await self._db.write(run)

    async def recent(self, runtime_key: str, *, limit: int = 20) -> list[Session]:
        """The runtime's sessions, newest first."""

        def run(conn: sqlite3.Connection) -> list[Session]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE runtime_key = ? ORDER BY id DESC LIMIT ?",
                (runtime_key, max(1, limit)),
            )
            return [Session.from_row(row) for row in rows]

        return await self._db.read(run)
