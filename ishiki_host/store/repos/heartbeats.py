"""Heartbeats: cron beats (``heartbeat``) and their run history (``heartbeat_runs``).

This repository stores and orders beats; it does not parse cron. Whoever computes schedules passes the
``next_run`` times in (or a ``schedule`` function to ``sync_managed``). Beats from ``heartbeats.json`` are
``managed``: ``sync_managed`` keeps them equal to the file by id and never touches the others, and ``update``
and ``delete`` refuse a managed beat unless told otherwise. A spent one-time managed beat should be kept with
``next_run = None`` rather than deleted, or the next sync would add it again. A paused user beat (``pause``)
keeps its row and is never ``due`` (nor ``next_due``) until ``resume`` gives it a next run again.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from ishiki_host.errors import StoreError
from ishiki_host.store.repos.beat_types import Beat, BeatRun, BeatSpec, BeatSyncReport, BeatTarget

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.store.db import Database

__all__ = ["RUN_OUTCOMES", "HeartbeatRepo", "RunOutcome", "Schedule"]

RunOutcome = Literal["ok", "failed", "skipped"]
RUN_OUTCOMES: tuple[RunOutcome, ...] = get_args(RunOutcome)
Schedule = Callable[[BeatSpec], "float | None"]
"""Computes a beat's next run time; called inside ``sync_managed`` for new beats and changed schedules."""

_WRITTEN = (
    "id, text, type, cron, timezone, target_profile, target_sid, target_channel, recurring, managed, created_by, "
    "last_run, next_run, created_at, updated_at, trust"
)
_COLUMNS = f"{_WRITTEN}, paused"  # a new beat is not paused: the column's default
_RUN_COLUMNS = "id, beat_id, started_at, finished_at, outcome, output"


@dataclass(frozen=True, slots=True)
class _Write:
    spec: BeatSpec
    next_run: float | None
    now: float


def _get(conn: sqlite3.Connection, beat_id: str) -> Beat | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM heartbeat WHERE id = ?", (beat_id,)).fetchone()
    return Beat.from_row(row) if row else None


def _target(spec: BeatSpec) -> tuple[str | None, str | None, str | None]:
    t = spec.target
    return (t.profile, t.sid, t.channel) if t else (None, None, None)


def _insert(conn: sqlite3.Connection, w: _Write, *, managed: bool, created_by: str | None) -> None:
    s = w.spec
    conn.execute(
        f"INSERT INTO heartbeat ({_WRITTEN}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)",
        (s.id, s.text, s.type, s.cron, s.timezone, *_target(s), int(s.recurring), int(managed), created_by,
         w.next_run, w.now, w.now, s.trust),
    )  # fmt: skip


def _replace(conn: sqlite3.Connection, w: _Write) -> None:
    s = w.spec
    conn.execute(
        "UPDATE heartbeat SET text = ?, type = ?, cron = ?, timezone = ?, target_profile = ?, target_sid = ?, "
        "target_channel = ?, recurring = ?, next_run = ?, updated_at = ?, trust = ? WHERE id = ?",
        (s.text, s.type, s.cron, s.timezone, *_target(s), int(s.recurring), w.next_run, w.now, s.trust, s.id),
    )


def _existing(conn: sqlite3.Connection, beat_id: str, allow_managed: bool) -> Beat:
    beat = _get(conn, beat_id)
    if beat is None:
        raise StoreError(f"no beat with id {beat_id!r}")
    if beat.managed and not allow_managed:
        raise StoreError(f"beat {beat_id!r} comes from heartbeats.json; change it there")
    return beat


def _sync(
    conn: sqlite3.Connection, specs: Sequence[BeatSpec], keep: Collection[str], schedule: Schedule, now: float
) -> BeatSyncReport:
    existing = {beat.id: beat for beat in _select(conn, "1", ())}
    report = BeatSyncReport()
    for spec in specs:
        if spec.id in keep:
            continue
        old = existing.get(spec.id)
        if old is not None and not old.managed:
            report.conflicts.append(spec.id)
        elif old is None:
            _insert(conn, _Write(spec, schedule(spec), now), managed=True, created_by=None)
            report.added.append(spec.id)
        elif old.spec != spec:
            next_run = schedule(spec) if old.spec.schedule_key() != spec.schedule_key() else old.next_run
            _replace(conn, _Write(spec, next_run, now))
            report.updated.append(spec.id)
    wanted = {spec.id for spec in specs} | set(keep)
    for beat_id in sorted(i for i, beat in existing.items() if beat.managed and i not in wanted):
        conn.execute("DELETE FROM heartbeat WHERE id = ?", (beat_id,))
        report.removed.append(beat_id)
    return report


def _select(conn: sqlite3.Connection, where: str, params: Sequence[object], tail: str = "") -> list[Beat]:
    sql = f"SELECT {_COLUMNS} FROM heartbeat WHERE {where} {tail}"
    return [Beat.from_row(row) for row in conn.execute(sql, tuple(params))]


def _finish(conn: sqlite3.Connection, run_id: int, outcome: str, output: str | None, now: float) -> BeatRun:
    row = conn.execute(f"SELECT {_RUN_COLUMNS} FROM heartbeat_runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise StoreError(f"no beat run with id {run_id}")
    if row["outcome"] != "running":
        raise StoreError(f"beat run {run_id} already finished ({row['outcome']})")
    conn.execute(
        "UPDATE heartbeat_runs SET finished_at = ?, outcome = ?, output = ? WHERE id = ?",
        (max(now, row["started_at"]), outcome, output, run_id),
    )
    return BeatRun.from_row(
        conn.execute(f"SELECT {_RUN_COLUMNS} FROM heartbeat_runs WHERE id = ?", (run_id,)).fetchone()
    )


def _unique_specs(specs: Sequence[BeatSpec]) -> None:
    counts = Counter(spec.validate().id for spec in specs)
    repeated = sorted(i for i, n in counts.items() if n > 1)
    if repeated:
        raise StoreError(f"beat ids must be unique; repeated: {', '.join(repeated)}")


class HeartbeatRepo:
    """The ``heartbeat`` and ``heartbeat_runs`` tables."""

    def __init__(self, db: Database, clock: Clock):
        self._db = db
        self._clock = clock

    async def add(self, spec: BeatSpec, *, next_run: float | None, created_by: str | None = None) -> Beat:
        """Store a user's (unmanaged) beat; ``StoreError`` if the id is taken."""
        write = _Write(spec.validate(), next_run, self._clock.now())

        def run(conn: sqlite3.Connection) -> Beat:
            if _get(conn, spec.id) is not None:
                raise StoreError(f"a beat with id {spec.id!r} already exists")
            _insert(conn, write, managed=False, created_by=created_by)
            return _existing(conn, spec.id, allow_managed=False)

        return await self._db.write(run)

    async def get(self, beat_id: str) -> Beat | None:
        """One beat by id."""
        return await self._db.read(lambda conn: _get(conn, beat_id))

    async def find(
        self, *, managed: bool | None = None, created_by: str | None = None, target: BeatTarget | None = None
    ) -> list[Beat]:
        """Beats matching every filter given (all beats by default), oldest first."""
        where: list[str] = ["1"]
        params: list[object] = []
        if managed is not None:
            where.append("managed = ?")
            params.append(int(managed))
        if created_by is not None:
            where.append("created_by = ?")
            params.append(created_by)
        if target is not None:
            where.append("target_profile = ? AND target_sid = ? AND target_channel = ?")
            params.extend((target.profile, target.sid, target.channel))
        return await self._db.read(lambda conn: _select(conn, " AND ".join(where), params, "ORDER BY created_at, id"))

    async def update(self, spec: BeatSpec, *, next_run: float | None, allow_managed: bool = False) -> Beat:
        """Replace a beat's definition and next run; refuses a managed beat unless ``allow_managed``."""
        write = _Write(spec.validate(), next_run, self._clock.now())

        def run(conn: sqlite3.Connection) -> Beat:
            _existing(conn, spec.id, allow_managed)
            _replace(conn, write)
            return _existing(conn, spec.id, allow_managed=True)

        return await self._db.write(run)

    async def delete(self, beat_id: str, *, allow_managed: bool = False) -> bool:
        """Delete a beat (its runs stay); ``False`` if there was none; refuses a managed beat unless told."""

        def run(conn: sqlite3.Connection) -> bool:
            if _get(conn, beat_id) is None:
                return False
            _existing(conn, beat_id, allow_managed)
            return conn.execute("DELETE FROM heartbeat WHERE id = ?", (beat_id,)).rowcount > 0

        return await self._db.write(run)

    async def sync_managed(
        self, specs: Sequence[BeatSpec], *, schedule: Schedule, keep_ids: Collection[str] = ()
    ) -> BeatSyncReport:
        """Make the managed beats equal to ``specs`` by id, in one transaction; user beats are never touched.

        New beats and beats whose cron, time zone or recurrence changed get ``schedule(spec)`` as next run;
        other changes keep the stored next and last run. ``keep_ids`` are left exactly as stored (entries of the
        file that failed validation this time). An id a user's beat already has is reported in ``conflicts``
        and skipped. If ``schedule`` raises, nothing changes and the error propagates.
        """
        _unique_specs(specs)
        now = self._clock.now()
        return await self._db.write(lambda conn: _sync(conn, specs, set(keep_ids), schedule, now))

    async def reschedule(self, beat_id: str, *, next_run: float | None, last_run: float | None = None) -> bool:
        """Set a beat's next run (and last run, when given); for the scheduler, managed beats included."""
        now = self._clock.now()
        return await self._db.write(
            lambda conn: (
                conn.execute(
                    "UPDATE heartbeat SET next_run = ?, last_run = coalesce(?, last_run), updated_at = ? WHERE id = ?",
                    (next_run, last_run, now, beat_id),
                ).rowcount
                > 0
            )
        )

    async def pause(self, beat_id: str) -> Beat:
        """Pause a user beat (kept as it is, never due until resumed); ``StoreError`` for an unknown or managed
        one."""
        return await self._user_change(beat_id, "paused = 1", ())

    async def resume(self, beat_id: str, *, next_run: float | None) -> Beat:
        """Resume a user beat with ``next_run`` as its next run (paused or not); ``StoreError`` as ``pause``."""
        return await self._user_change(beat_id, "paused = 0, next_run = ?", (next_run,))

    async def _user_change(self, beat_id: str, assignments: str, params: tuple[object, ...]) -> Beat:
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> Beat:
            _existing(conn, beat_id, allow_managed=False)
            conn.execute(f"UPDATE heartbeat SET {assignments}, updated_at = ? WHERE id = ?", (*params, now, beat_id))
            return _existing(conn, beat_id, allow_managed=False)

        return await self._db.write(run)

    async def due(self, *, now: float | None = None, limit: int = 100) -> list[Beat]:
        """Beats not paused whose next run is at or before ``now`` (the clock's by default), earliest first."""
        cutoff = self._clock.now() if now is None else now
        return await self._db.read(
            lambda conn: _select(
                conn, "next_run <= ? AND paused = 0", (cutoff,), f"ORDER BY next_run, id LIMIT {max(1, int(limit))}"
            )
        )

    async def next_due(self) -> Beat | None:
        """The beat not paused that runs next (earliest ``next_run``), if any is scheduled."""
        beats = await self._db.read(
            lambda conn: _select(conn, "next_run IS NOT NULL AND paused = 0", (), "ORDER BY next_run, id LIMIT 1")
        )
        return beats[0] if beats else None

    async def start_run(self, beat_id: str) -> BeatRun:
        """Record that a beat started running now."""
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> BeatRun:
            cursor = conn.execute(
                "INSERT INTO heartbeat_runs (beat_id, started_at, outcome) VALUES (?, ?, 'running')", (beat_id, now)
            )
            return BeatRun(int(cursor.lastrowid or 0), beat_id, now, None, "running", None)

        return await self._db.write(run)

    async def finish_run(self, run_id: int, outcome: RunOutcome, output: str | None = None) -> BeatRun:
        """Record how a run ended; ``StoreError`` if the run is unknown or already finished."""
        if outcome not in RUN_OUTCOMES:
            raise StoreError(f"run outcome {outcome!r} is not one of {', '.join(RUN_OUTCOMES)}")
        now = self._clock.now()
        return await self._db.write(lambda conn: _finish(conn, run_id, outcome, output, now))

    async def runs(self, beat_id: str, *, limit: int = 20) -> list[BeatRun]:
        """A beat's runs, newest first."""

        def run(conn: sqlite3.Connection) -> list[BeatRun]:
            rows = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM heartbeat_runs WHERE beat_id = ? ORDER BY started_at DESC, id DESC "
                "LIMIT ?",
                (beat_id, max(1, limit)),
            )
            return [BeatRun.from_row(row) for row in rows]

        return await self._db.read(run)

    async def fail_unfinished_runs(self, reason: str = "the host stopped before the run finished") -> int:
        """Mark runs still ``running`` (left by a crash) as failed; call at start. Returns how many."""
        now = self._clock.now()
        return await self._db.write(
            lambda conn: (
                conn.execute(
                    "UPDATE heartbeat_runs SET outcome = 'failed', finished_at = max(started_at, ?), output = ? "
                    "WHERE outcome = 'running'",
                    (now, reason),
                ).rowcount
            )
        )

    async def prune_runs(self, older_than_seconds: float) -> int:
        """Delete finished runs that started more than ``older_than_seconds`` ago; returns how many."""
        cutoff = self._clock.now() - max(0.0, older_than_seconds)
        return await self._db.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM heartbeat_runs WHERE started_at < ? AND outcome != 'running'", (cutoff,)
                ).rowcount
            )
        )
