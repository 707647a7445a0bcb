"""Heartbeats on PostgreSQL: each due beat is claimed by one host of the fleet, and a claim its host drops passes on.

    beats = PgBeats(pool, holder="host-a", next_run=next_run, claim_seconds=900)
    await beats.setup()
    await beats.add(spec)                                  # first run from the schedule; StoreError naming a bad one
    for claim in await beats.claim():                       # due beats, and runs whose claimer went away
        claim = await beats.renew(claim)                    # a long run keeps its claim; ClaimLost: taken over
        await beats.finish(claim, "ok", output)             # ClaimLost: another host has the run now

The tables are SQLite's ``heartbeat`` and ``heartbeat_runs`` (``store.repos.heartbeats``) with the same columns and
meaning, as ``ishiki_heartbeat`` and ``ishiki_heartbeat_runs``, read back as the same values (``Beat``,
``BeatRun``); times are Unix seconds, from the database's clock. The schedule is the host's: ``next_run(spec,
after)`` is when ``spec`` fires next after ``after`` (``heartbeat.rules.next_run_for`` with the default zone,
which the store may not import).

Claim, then run. ``claim`` is one transaction: it locks due beats with ``FOR UPDATE SKIP LOCKED`` (a beat another
host is claiming is passed over, never waited for), moves each one's ``next_run`` to its next slot and records its
run as ``running``, claimed by this host until ``claim_seconds`` after the database's ``now()``, with a fencing
token from one sequence. The run holds the slot it was due for (``due_at``), and a unique index on ``(beat_id,
due_at)`` makes a second run for one slot impossible, whatever the schedule or an operator does. The beat runs
after the commit, outside any transaction, for as long as it takes (``renew`` extends the claim); its result is
recorded only with the token of the claim (``finish``; late is fine while nobody took the run over). A host that
dies with a claim loses it when ``claimed_until`` passes: the next ``claim`` of any host takes the run over with a
new token (``attempt`` + 1), so the beat is not lost, and the first host, should it wake, records nothing. A run
taken ``max_attempts`` times and never finished is recorded as failed instead (a beat that kills its host must not
kill the fleet). A host that dies inside ``claim`` loses nothing: its transaction rolls back, and its connection
ends a transaction that stops moving for 5 s (``idle_in_transaction_session_timeout``; ``claim_seconds`` when
shorter), so a frozen host holds the beats it was claiming no longer than that.

So a slot is claimed once, and run once unless its host dies mid-run: then it runs again on another host (at
least once; what the run writes under the runtime's lease is fenced there). A beat whose stored schedule no
longer parses is not run: its failed run names it, and it waits with no next run until it is changed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ishiki_host.errors import IshikiError, StoreError
from ishiki_host.store.pg.leases import LeaseLost
from ishiki_host.store.pg.schema import migrate
from ishiki_host.store.repos.beat_types import Beat, BeatRun, BeatSpec, BeatTarget
from ishiki_host.store.repos.heartbeats import RUN_OUTCOMES, RunOutcome

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["BeatClaim", "ClaimLost", "NextRun", "PgBeats"]

logger = logging.getLogger(__name__)

_COLUMNS = (
    "id, text, type, cron, timezone, target_profile, target_sid, target_channel, recurring, managed, created_by, "
    "last_run, next_run, created_at, updated_at, trust, paused"
)
_RUN_COLUMNS = "id, beat_id, started_at, finished_at, outcome, output"
_CLAIM_COLUMNS = "id, due_at, claimed_by, token, extract(epoch FROM claimed_until)::float8, attempt"
_NOW = "extract(epoch FROM now())::float8"
_CLAIM_TRANSACTION_SECONDS = 5.0  # a claim is a few statements: a transaction idle this long, its host froze

_INSERT = f"""
INSERT INTO ishiki_heartbeat ({_COLUMNS})
VALUES (%(id)s, %(text)s, %(type)s, %(cron)s, %(timezone)s, %(profile)s, %(sid)s, %(channel)s, %(recurring)s,
        %(managed)s, %(created_by)s, NULL, %(next_run)s, {_NOW}, {_NOW}, %(trust)s, false)
ON CONFLICT (id) DO NOTHING
RETURNING {_COLUMNS}
"""
_DUE = f"""
SELECT {_COLUMNS} FROM ishiki_heartbeat WHERE next_run <= %(now)s AND NOT paused
ORDER BY next_run, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED
"""
_RECORD = f"""
INSERT INTO ishiki_heartbeat_runs (beat_id, started_at, outcome, due_at, claimed_by, claimed_until, token)
VALUES (%(beat)s, %(now)s, 'running', %(due)s, %(holder)s, now() + %(seconds)s * interval '1 second',
        nextval('ishiki_beat_tokens'))
ON CONFLICT (beat_id, due_at) WHERE due_at IS NOT NULL DO NOTHING
RETURNING {_CLAIM_COLUMNS}
"""
_UNSCHEDULABLE = """
INSERT INTO ishiki_heartbeat_runs (beat_id, started_at, finished_at, outcome, output, due_at)
VALUES (%(beat)s, %(now)s, %(now)s, 'failed', %(output)s, %(due)s)
ON CONFLICT (beat_id, due_at) WHERE due_at IS NOT NULL DO NOTHING
"""
_ADVANCE = """
UPDATE ishiki_heartbeat SET next_run = %(next_run)s, last_run = coalesce(%(last_run)s, last_run),
    updated_at = %(now)s
WHERE id = %(beat)s
"""
_ABANDONED = """
SELECT runs.id FROM ishiki_heartbeat_runs AS runs
WHERE runs.outcome = 'running' AND runs.claimed_until <= now() AND ({which})
ORDER BY runs.claimed_until LIMIT %(limit)s FOR UPDATE OF runs SKIP LOCKED
"""
_BEAT_EXISTS = "EXISTS (SELECT 1 FROM ishiki_heartbeat WHERE ishiki_heartbeat.id = runs.beat_id)"
_TAKE_OVER = f"""
UPDATE ishiki_heartbeat_runs SET claimed_by = %(holder)s, token = nextval('ishiki_beat_tokens'),
    claimed_until = now() + %(seconds)s * interval '1 second', attempt = attempt + 1
WHERE id IN ({_ABANDONED.format(which=f"runs.attempt < %(max_attempts)s AND {_BEAT_EXISTS}")})
RETURNING beat_id, {_CLAIM_COLUMNS}
"""
_GIVE_UP = f"""
UPDATE ishiki_heartbeat_runs SET outcome = 'failed', finished_at = greatest(started_at, {_NOW}),
    output = 'claimed ' || attempt || ' time(s) and never finished: each claimer stopped or lost its claim '
             || 'during the run'
WHERE id IN ({_ABANDONED.format(which=f"runs.attempt >= %(max_attempts)s OR NOT {_BEAT_EXISTS}")})
"""
_RENEW = f"""
UPDATE ishiki_heartbeat_runs SET claimed_until = now() + %(seconds)s * interval '1 second'
WHERE id = %(run)s AND token = %(token)s AND outcome = 'running' AND claimed_until > now()
RETURNING {_CLAIM_COLUMNS}
"""
_FINISH = f"""
UPDATE ishiki_heartbeat_runs SET finished_at = greatest(started_at, {_NOW}), outcome = %(outcome)s,
    output = %(output)s
WHERE id = %(run)s AND token = %(token)s AND outcome = 'running'
RETURNING {_RUN_COLUMNS}
"""


class NextRun(Protocol):
    """The schedule: when ``spec`` fires next after ``after`` (Unix seconds), ``None`` for never; it raises
    (``HeartbeatInvalid``) for a cron or zone that does not parse."""

    def __call__(self, spec: BeatSpec, *, after: float) -> float | None:
        """The next run of ``spec`` after ``after``."""
        ...


class ClaimLost(LeaseLost):
    """A beat run's claim that is no longer its host's: it expired and another host took the run over."""


@dataclass(frozen=True, slots=True)
class BeatClaim:
    """A run of ``beat`` for its slot ``due_at``, held by ``holder`` with fencing ``token`` until
    ``claimed_until`` (Unix seconds on the database's clock); ``attempt`` counts the hosts that took it."""

    run_id: int
    beat: Beat
    due_at: float
    holder: str
    token: int
    claimed_until: float
    attempt: int


def _beat(row: Sequence[Any]) -> Beat:
    target = BeatTarget(row[5], row[6], row[7]) if row[5] is not None else None
    return Beat(
        row[0], row[1], row[2], row[3], row[4], target, bool(row[8]), bool(row[9]), row[10], row[11], row[12],
        row[13], row[14], row[15], bool(row[16]),
    )  # fmt: skip


def _claim(beat: Beat, row: Sequence[Any]) -> BeatClaim:
    run_id, due_at, holder, token, claimed_until, attempt = row
    return BeatClaim(int(run_id), beat, float(due_at), str(holder), int(token), float(claimed_until), int(attempt))


async def _now(conn: AsyncConnection[Any]) -> float:
    row = await (await conn.execute(f"SELECT {_NOW}")).fetchone()
    assert row is not None
    return float(row[0])


class PgBeats:
    """The fleet's heartbeats, claimed by ``holder`` for ``claim_seconds`` at a time (see the module docstring)."""

    def __init__(self, pool: AsyncConnectionPool[Any], holder: str, *, next_run: NextRun, claim_seconds: float = 900.0):
        if not holder:
            raise ValueError("a claimer of beats needs a name")
        if claim_seconds <= 0:
            raise ValueError(f"a claim lasts a positive number of seconds, not {claim_seconds}")
        self.pool = pool
        self.holder = holder
        self.next_run = next_run
        self.claim_seconds = claim_seconds

    async def setup(self) -> None:
        """Bring the database to the fleet's schema (``schema.migrate``: the beats' tables among the rest)."""
        await migrate(self.pool)

    async def add(
        self, spec: BeatSpec, *, first_run: float | None = None, managed: bool = False, created_by: str | None = None
    ) -> Beat:
        """Store a beat, due at ``first_run`` or else at its schedule's first slot after now; ``StoreError`` if
        the id is taken or the schedule does not parse (naming the beat and what is wrong)."""
        spec.validate()
        async with self.pool.connection() as conn:
            scheduled = self._first(spec, await _now(conn))
            params = {**self._fields(spec), "managed": managed, "created_by": created_by}
            params["next_run"] = scheduled if first_run is None else first_run
            row = await (await conn.execute(_INSERT, params)).fetchone()
        if row is None:
            raise StoreError(f"a beat with id {spec.id!r} already exists")
        return _beat(row)

    async def get(self, beat_id: str) -> Beat | None:
        """One beat by id."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(f"SELECT {_COLUMNS} FROM ishiki_heartbeat WHERE id = %s", (beat_id,))
            row = await cursor.fetchone()
        return _beat(row) if row else None

    async def reschedule(self, beat_id: str, *, next_run: float | None, last_run: float | None = None) -> bool:
        """Set a beat's next run (and last run, when given); ``False`` when there is no such beat."""
        async with self.pool.connection() as conn:
            params = {"beat": beat_id, "next_run": next_run, "last_run": last_run, "now": await _now(conn)}
            return bool((await conn.execute(_ADVANCE, params)).rowcount > 0)

    async def pause(self, beat_id: str) -> Beat:
        """Pause a user beat (never claimed until resumed); ``StoreError`` for an unknown or managed one."""
        return await self._user_change(beat_id, "paused = true", {})

    async def resume(self, beat_id: str, *, next_run: float | None) -> Beat:
        """Resume a user beat with ``next_run`` as its next run; ``StoreError`` as ``pause``."""
        return await self._user_change(beat_id, "paused = false, next_run = %(next_run)s", {"next_run": next_run})

    async def claim(self, *, limit: int = 100, max_attempts: int = 3) -> list[BeatClaim]:
        """Runs for this host to do now, in one transaction: the due beats no other host is claiming (each moved
        to its next slot), then runs whose claim expired (taken over); earliest first, ``limit`` of each at most."""
        async with self.pool.connection() as conn, conn.transaction():
            milliseconds = max(1, round(min(self.claim_seconds, _CLAIM_TRANSACTION_SECONDS) * 1000))
            await conn.execute(f"SET LOCAL idle_in_transaction_session_timeout = {milliseconds}")
            now = await _now(conn)
            due = [_beat(row) for row in await (await conn.execute(_DUE, {"now": now, "limit": limit})).fetchall()]
            claims = [claim for beat in due if (claim := await self._claim_due(conn, beat, now))]
            return claims + await self._take_over(conn, limit, max_attempts)

    async def renew(self, claim: BeatClaim) -> BeatClaim:
        """``claim`` for another ``claim_seconds`` from now; ``ClaimLost`` when it expired or was taken over."""
        params = {"run": claim.run_id, "token": claim.token, "seconds": self.claim_seconds}
        async with self.pool.connection() as conn:
            row = await (await conn.execute(_RENEW, params)).fetchone()
        if row is None:
            raise ClaimLost(f"the claim on beat {claim.beat.id!r}'s run {claim.run_id} is no longer {self.holder}'s")
        return _claim(claim.beat, row)

    async def finish(self, claim: BeatClaim, outcome: RunOutcome, output: str | None = None) -> BeatRun:
        """Record how the claimed run ended; ``ClaimLost`` when another host took it over (nothing recorded),
        ``StoreError`` when the run is unknown or already finished."""
        if outcome not in RUN_OUTCOMES:
            raise StoreError(f"run outcome {outcome!r} is not one of {', '.join(RUN_OUTCOMES)}")
        params = {"run": claim.run_id, "token": claim.token, "outcome": outcome, "output": output}
        async with self.pool.connection() as conn:
            row = await (await conn.execute(_FINISH, params)).fetchone()
            if row is None:
                await self._why_not(conn, claim)
        assert row is not None
        return BeatRun(int(row[0]), str(row[1]), float(row[2]), float(row[3]), str(row[4]), row[5])

    async def runs(self, beat_id: str, *, limit: int = 20) -> list[BeatRun]:
        """A beat's runs, newest first."""
        sql = (
            f"SELECT {_RUN_COLUMNS} FROM ishiki_heartbeat_runs WHERE beat_id = %s "
            "ORDER BY started_at DESC, id DESC LIMIT %s"
        )
        async with self.pool.connection() as conn:
            rows = await (await conn.execute(sql, (beat_id, max(1, limit)))).fetchall()
        return [BeatRun(*row) for row in rows]

    def _first(self, spec: BeatSpec, now: float) -> float | None:
        try:
            return self.next_run(spec, after=now)
        except (IshikiError, ValueError) as exc:  # the schedule is the host's: its errors are the beat's
            raise StoreError(f"beat {spec.id!r}: cannot schedule cron {spec.cron!r}: {exc}") from exc

    @staticmethod
    def _fields(spec: BeatSpec) -> dict[str, Any]:
        t = spec.target
        return {
            "id": spec.id, "text": spec.text, "type": spec.type, "cron": spec.cron, "timezone": spec.timezone,
            "profile": t.profile if t else None, "sid": t.sid if t else None, "channel": t.channel if t else None,
            "recurring": spec.recurring, "trust": spec.trust,
        }  # fmt: skip

    async def _claim_due(self, conn: AsyncConnection[Any], beat: Beat, now: float) -> BeatClaim | None:
        assert beat.next_run is not None  # due beats are scheduled
        try:
            following = self._first(beat.spec, now) if beat.recurring else None
        except StoreError as exc:
            await self._unschedulable(conn, beat, now, exc)
            return None
        due = beat.next_run
        params = {"beat": beat.id, "now": now, "due": due, "holder": self.holder}
        row = await (await conn.execute(_RECORD, {**params, "seconds": self.claim_seconds})).fetchone()
        await conn.execute(_ADVANCE, {**params, "next_run": following, "last_run": now if row else None})
        if row is None:
            logger.warning("beat %r: its slot %s ran before; moved on without running it again", beat.id, due)
            return None
        return _claim(beat, row)

    async def _unschedulable(self, conn: AsyncConnection[Any], beat: Beat, now: float, exc: StoreError) -> None:
        logger.error("%s; not run until it is changed", exc)
        output = f"{exc}; not run until it is changed"
        await conn.execute(_UNSCHEDULABLE, {"beat": beat.id, "now": now, "output": output, "due": beat.next_run})
        await conn.execute(_ADVANCE, {"beat": beat.id, "next_run": None, "last_run": None, "now": now})

    async def _take_over(self, conn: AsyncConnection[Any], limit: int, max_attempts: int) -> list[BeatClaim]:
        bounds = {"limit": limit, "max_attempts": max(1, max_attempts)}
        await conn.execute(_GIVE_UP, bounds)
        params = {**bounds, "holder": self.holder, "seconds": self.claim_seconds}
        rows = await (await conn.execute(_TAKE_OVER, params)).fetchall()
        if not rows:
            return []
        cursor = await conn.execute(
            f"SELECT {_COLUMNS} FROM ishiki_heartbeat WHERE id = ANY(%s)", ([row[0] for row in rows],)
        )
        beats = {beat.id: beat for beat in map(_beat, await cursor.fetchall())}
        taken = [_claim(beats[row[0]], row[1:]) for row in rows]
        for claim in taken:
            logger.warning("beat %r: run %d lost its claimer; taken over (attempt %d)", *_described(claim))
        return sorted(taken, key=lambda claim: (claim.due_at, claim.beat.id))

    async def _why_not(self, conn: AsyncConnection[Any], claim: BeatClaim) -> None:
        cursor = await conn.execute(
            "SELECT outcome, claimed_by, token FROM ishiki_heartbeat_runs WHERE id = %s", (claim.run_id,)
        )
        row = await cursor.fetchone()
        if row is None:
            raise StoreError(f"no beat run with id {claim.run_id}")
        outcome, holder, token = row
        if token != claim.token:
            raise ClaimLost(
                f"beat {claim.beat.id!r}'s run {claim.run_id} was taken over by {holder} (token {token}); "
                f"{self.holder}'s result (token {claim.token}) is not recorded"
            )
        raise StoreError(f"beat run {claim.run_id} already finished ({outcome})")

    async def _user_change(self, beat_id: str, assignments: str, params: dict[str, Any]) -> Beat:
        async with self.pool.connection() as conn:
            beat = await self._user_beat(conn, beat_id)
            sql = f"UPDATE ishiki_heartbeat SET {assignments}, updated_at = {_NOW} WHERE id = %(beat)s"
            await conn.execute(sql, {**params, "beat": beat.id})
            return await self._user_beat(conn, beat_id)

    @staticmethod
    async def _user_beat(conn: AsyncConnection[Any], beat_id: str) -> Beat:
        cursor = await conn.execute(f"SELECT {_COLUMNS} FROM ishiki_heartbeat WHERE id = %s", (beat_id,))
        row = await cursor.fetchone()
        if row is None:
            raise StoreError(f"no beat with id {beat_id!r}")
        beat = _beat(row)
        if beat.managed:
            raise StoreError(f"beat {beat_id!r} comes from heartbeats.json; change it there")
        return beat


def _described(claim: BeatClaim) -> tuple[str, int, int]:
    return claim.beat.id, claim.run_id, claim.attempt
