"""The fleet at a glance, as JSON: its hosts and what each holds, its leases, its inbox's lag, its beats.

    status = await fleet_status(pool, alive_seconds=15)       # one read-only snapshot of the database
    status = await read_fleet(url, alive_seconds=15)          # the same from a URL; {"store", "error"} if it fails

Every number is computed in SQL, in one read-only ``REPEATABLE READ`` transaction, so the sections agree with
each other and every age is measured on the database's clock (``now()``: the snapshot's instant), never on the
asking machine's. A host is alive when it was seen within ``alive_seconds`` and has not stopped
(``store.pg.hosts``), and ``upSeconds`` is how long it has run (until it stopped or was last seen, when it is not
alive); hosts neither alive, nor holding a lease, nor seen within ``recent_seconds`` are only
counted (``hostsHidden``), so a fleet that restarts often stays readable. The inbox's ``lagSeconds`` is the age of
its oldest event that no host has taken yet; ``taken`` counts events taken and not yet done (a host working on
them, or one that died and whose next owner will take them again).

The JSON, every time in seconds (Unix seconds on the database's clock for ``startedAt`` and ``stoppedAt``)::

    {"schemaVersion": 3, "aliveSeconds": 15,
     "hosts": [{"holder", "name", "pid", "version", "startedAt", "seenSecondsAgo", "stoppedAt" (null: running),
                "upSeconds", "alive", "runtimeLeases", "accountLeases", "beatsRunning"}, ...],
     "hostsHidden": 0,
     "leases": {"runtime", "account", "other"},                # live leases by the kind their name starts with
     "inbox": {"waiting", "taken", "lagSeconds" (null: nothing waits)},
     "beats": {"due", "running", "abandoned"}}                 # abandoned: running, its claim passed

Nothing here writes: a database the fleet's hosts never set up, or one of an older schema, is reported as such
(``problem``) rather than migrated, since looking must not change what is looked at.
"""

from __future__ import annotations

from typing import Any

import anyio
import psycopg
from psycopg_pool import AsyncConnectionPool

from ishiki_host.jsontypes import Json
from ishiki_host.store.pg.pool import StoreUnreachable, open_pool
from ishiki_host.store.pg.schema import SCHEMA_VERSION, schema_version
from ishiki_host.store.pg.urls import safe_url

__all__ = ["fleet_status", "read_fleet"]

_HOSTS = """
WITH held AS (
    SELECT holder, count(*) FILTER (WHERE name LIKE 'runtime:%%') AS runtimes,
           count(*) FILTER (WHERE name LIKE 'account:%%') AS accounts
    FROM ishiki_leases WHERE expires_at > now() GROUP BY holder
), running AS (
    SELECT claimed_by AS holder, count(*) AS beats FROM ishiki_heartbeat_runs
    WHERE outcome = 'running' AND claimed_until > now() GROUP BY claimed_by
), hosts AS (
    SELECT h.*, h.stopped_at IS NULL AND h.seen_at > now() - %(alive)s * interval '1 second' AS alive
    FROM ishiki_hosts h
)
SELECT h.holder, h.name, h.pid, h.version, extract(epoch FROM h.started_at)::float8,
       greatest(0, extract(epoch FROM now() - h.seen_at))::float8, extract(epoch FROM h.stopped_at)::float8,
       extract(epoch FROM CASE WHEN h.alive THEN now() ELSE coalesce(h.stopped_at, h.seen_at) END - h.started_at)
           ::float8,
       h.alive, coalesce(l.runtimes, 0), coalesce(l.accounts, 0), coalesce(r.beats, 0),
       h.alive OR l.holder IS NOT NULL OR h.seen_at > now() - %(recent)s * interval '1 second' AS shown
FROM hosts h LEFT JOIN held l USING (holder) LEFT JOIN running r USING (holder)
ORDER BY h.alive DESC, h.name, h.started_at DESC, h.holder
"""
_LEASES = """
SELECT count(*) FILTER (WHERE name LIKE 'runtime:%'), count(*) FILTER (WHERE name LIKE 'account:%'),
       count(*) FILTER (WHERE name NOT LIKE 'runtime:%' AND name NOT LIKE 'account:%')
FROM ishiki_leases WHERE expires_at > now()
"""
# Nothing waiting: no lag, NULL (the CASE: greatest() would make a NULL 0). greatest(0, ...) only keeps an event put
# just as the snapshot began (after its now(), before its first read) from a negative age.
_INBOX = """
SELECT count(*) FILTER (WHERE taken_token IS NULL), count(*) FILTER (WHERE taken_token IS NOT NULL),
       CASE WHEN bool_or(taken_token IS NULL)
            THEN greatest(0, extract(epoch FROM now() - min(put_at) FILTER (WHERE taken_token IS NULL)))::float8 END
FROM ishiki_inbox
"""
# Beat times are Unix seconds (store.pg.beats); a run whose claim passed waits for another host to take it over.
_BEATS = """
SELECT (SELECT count(*) FROM ishiki_heartbeat WHERE next_run <= extract(epoch FROM now()) AND NOT paused),
       count(*) FILTER (WHERE claimed_until IS NULL OR claimed_until > now()),
       count(*) FILTER (WHERE claimed_until <= now())
FROM ishiki_heartbeat_runs WHERE outcome = 'running'
"""


async def fleet_status(
    pool: AsyncConnectionPool[Any], *, alive_seconds: float, recent_seconds: float = 3600.0
) -> dict[str, Json]:
    """The fleet in the database of ``pool``, as JSON (see the module docstring)."""
    version = await schema_version(pool)
    status: dict[str, Json] = {"schemaVersion": version, "aliveSeconds": alive_seconds}
    if version < SCHEMA_VERSION:
        return {**status, "problem": _too_old(version)}
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        rows = await (await conn.execute(_HOSTS, {"alive": alive_seconds, "recent": recent_seconds})).fetchall()
        leases, inbox, beats = [await _aggregate(conn, sql) for sql in (_LEASES, _INBOX, _BEATS)]
    shown = [_host(row) for row in rows if row[-1]]
    return {
        **status,
        "hosts": shown,
        "hostsHidden": len(rows) - len(shown),
        "leases": {"runtime": int(leases[0]), "account": int(leases[1]), "other": int(leases[2])},
        "inbox": {"waiting": int(inbox[0]), "taken": int(inbox[1]), "lagSeconds": inbox[2]},
        "beats": {"due": int(beats[0]), "running": int(beats[1]), "abandoned": int(beats[2])},
    }


async def read_fleet(
    url: str, *, alive_seconds: float, recent_seconds: float = 3600.0, answer_seconds: float = 10.0
) -> dict[str, Json]:
    """``fleet_status`` of the database at ``url`` with ``"store"`` (``safe_url``) added; when it does not
    answer within ``answer_seconds`` or fails, ``{"store", "error"}`` with a sentence naming the server."""
    where = safe_url(url)
    try:
        with anyio.fail_after(answer_seconds):  # real time: a server that stopped answering must not hang status
            pool = await open_pool(url, min_size=1, max_size=1, connect_seconds=answer_seconds)
            try:
                status = await fleet_status(pool, alive_seconds=alive_seconds, recent_seconds=recent_seconds)
                return {"store": where, **status}
            finally:
                with anyio.CancelScope(shield=True):
                    await pool.close(timeout=1.0)
    except StoreUnreachable as exc:
        return {"store": where, "error": str(exc)}
    except TimeoutError:
        return {"store": where, "error": f"the PostgreSQL store {where} did not answer within {answer_seconds:g} s"}
    except psycopg.Error as exc:
        return {"store": where, "error": f"the PostgreSQL store {where} could not be read: {_first_line(exc)}"}


async def _aggregate(conn: psycopg.AsyncConnection[Any], sql: str) -> tuple[Any, ...]:
    row = await (await conn.execute(sql)).fetchone()
    assert row is not None  # an aggregate without GROUP BY: always one row
    return tuple(row)


def _host(row: tuple[Any, ...]) -> dict[str, Json]:
    holder, name, pid, version, started, seen_ago, stopped, up, alive, runtimes, accounts, beats, _ = row
    return {
        "holder": holder,
        "name": name,
        "pid": pid,
        "version": version,
        "startedAt": started,
        "seenSecondsAgo": seen_ago,
        "stoppedAt": stopped,
        "upSeconds": up,
        "alive": bool(alive),
        "runtimeLeases": int(runtimes),
        "accountLeases": int(accounts),
        "beatsRunning": int(beats),
    }


def _too_old(version: int) -> str:
    if version == 0:
        return "no fleet tables in this database yet: no host has started on it"
    return (
        f"the fleet's schema is version {version}, older than this ishiki reads (version {SCHEMA_VERSION}): "
        "the first host of this version to start upgrades it"
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
