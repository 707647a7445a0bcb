"""The fleet's view on a real PostgreSQL: live leases by kind and by host, the inbox's lag from when events were put,
beats due and running, hosts long gone only counted, and a database that is not there named without its password."""

from __future__ import annotations

from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.store.pg.fleetview import fleet_status, read_fleet
from ishiki_host.store.pg.hosts import HostBook
from ishiki_host.store.pg.inbox import Inbox
from ishiki_host.store.pg.leases import LeaseBook
from ishiki_host.store.pg.schema import PG_MIGRATIONS, SCHEMA_VERSION, migrate

pytestmark = pytest.mark.anyio

KEY = "ana/telegram:1/private:42"


async def execute(pool: AsyncConnectionPool[Any], sql: str, params: tuple[Any, ...] = ()) -> None:
    async with pool.connection() as conn:
        await conn.execute(sql, params)


async def hosts(pool: AsyncConnectionPool[Any], *holders: str) -> None:
    for holder in holders:
        book = HostBook(pool, holder, holder.split("/")[0])
        await book.setup()
        await book.register()


async def test_leases_by_kind_and_by_holder(pg_pool: AsyncConnectionPool[Any]) -> None:
    await hosts(pg_pool, "a/1", "b/2")
    a, b = LeaseBook(pg_pool, "a/1", seconds=60), LeaseBook(pg_pool, "b/2", seconds=60)
    stranger = LeaseBook(pg_pool, "unregistered/9", seconds=60)
    for book, name in [(a, f"runtime:{KEY}"), (a, "runtime:ana/x:1/private:1"), (a, "account:telegram:1"),
                       (b, "runtime:bo/x:1/private:2"), (b, "account:whatsapp:1"), (b, "singleton:janitor"),
                       (stranger, "runtime:cy/x:1/private:3"), (b, "runtime:gone/x:1/private:4")]:  # fmt: skip
        assert await book.acquire(name) is not None
    await execute(pg_pool, "UPDATE ishiki_leases SET expires_at = clock_timestamp() - interval '1 s' "
                           "WHERE name = 'runtime:gone/x:1/private:4'")  # fmt: skip
    status = await fleet_status(pg_pool, alive_seconds=30)
    assert status["schemaVersion"] == SCHEMA_VERSION
    assert "problem" not in status
    assert status["leases"] == {"runtime": 4, "account": 2, "other": 1}  # the expired one is not counted
    held = {h["holder"]: (h["runtimeLeases"], h["accountLeases"], h["alive"]) for h in status["hosts"]}
    assert held == {"a/1": (2, 1, True), "b/2": (1, 1, True)}  # a holder with no host row is only in the totals
    assert status["hostsHidden"] == 0


async def test_the_inbox_lag_is_the_age_of_the_oldest_event_not_taken(pg_pool: AsyncConnectionPool[Any]) -> None:
    await hosts(pg_pool, "a/1")
    inbox = Inbox(pg_pool)
    empty = await fleet_status(pg_pool, alive_seconds=30)
    assert empty["inbox"] == {"waiting": 0, "taken": 0, "lagSeconds": None}
    seqs = [await inbox.put(KEY, f"event {n}") for n in range(3)]
    ages = {seqs[0]: 600, seqs[1]: 120, seqs[2]: 30}  # seconds before the database's now
    for seq, age in ages.items():
        await execute(pg_pool, "UPDATE ishiki_inbox SET put_at = clock_timestamp() - %s * interval '1 s' "
                               "WHERE seq = %s", (age, seq))  # fmt: skip
    lease = await LeaseBook(pg_pool, "a/1", seconds=60).acquire(f"runtime:{KEY}")
    assert lease is not None
    assert [item.seq for item in await inbox.take(KEY, lease, limit=1)] == [seqs[0]]  # the oldest, now taken

    status = await fleet_status(pg_pool, alive_seconds=30)
    inbox_status = status["inbox"]
    assert (inbox_status["waiting"], inbox_status["taken"]) == (2, 1)
    assert 120 <= inbox_status["lagSeconds"] < 150  # the oldest waiting, not the one being worked on


async def test_beats_due_running_and_abandoned(pg_pool: AsyncConnectionPool[Any]) -> None:
    await hosts(pg_pool, "a/1")
    beat = (
        "INSERT INTO ishiki_heartbeat (id, text, type, cron, next_run, created_at, updated_at, paused) "
        "VALUES (%s, 'x', 'reminder', '* * * * *', extract(epoch FROM now()) + %s, 0, 0, %s)"
    )
    for beat_id, offset, paused in [("due", -60, False), ("later", 3600, False), ("paused", -60, True)]:
        await execute(pg_pool, beat, (beat_id, offset, paused))
    run = (
        "INSERT INTO ishiki_heartbeat_runs (beat_id, started_at, outcome, due_at, claimed_by, claimed_until, token) "
        "VALUES (%s, 0, 'running', %s, %s, clock_timestamp() + %s * interval '1 s', 1)"
    )
    await execute(pg_pool, run, ("later", 1.0, "a/1", 600))
    await execute(pg_pool, run, ("later", 2.0, "dead/0", -5))  # its claimer went away
    status = await fleet_status(pg_pool, alive_seconds=30)
    assert status["beats"] == {"due": 1, "running": 1, "abandoned": 1}
    assert [h["beatsRunning"] for h in status["hosts"]] == [1]


async def test_hosts_long_gone_are_only_counted(pg_pool: AsyncConnectionPool[Any]) -> None:
    await hosts(pg_pool, "a/1", "old/1", "old/2")
    await execute(pg_pool, "UPDATE ishiki_hosts SET seen_at = clock_timestamp() - interval '2 hours', "
                           "stopped_at = clock_timestamp() - interval '2 hours' WHERE name = 'old'")  # fmt: skip
    status = await fleet_status(pg_pool, alive_seconds=30, recent_seconds=3600)
    assert [h["holder"] for h in status["hosts"]] == ["a/1"]
    assert status["hostsHidden"] == 2
    wider = await fleet_status(pg_pool, alive_seconds=30, recent_seconds=3 * 3600)  # the newest run of a name first
    assert [(h["holder"], h["alive"]) for h in wider["hosts"]] == [("a/1", True), ("old/2", False), ("old/1", False)]


async def test_a_database_not_set_up_is_reported_not_migrated(pg_pool: AsyncConnectionPool[Any]) -> None:
    status = await fleet_status(pg_pool, alive_seconds=30)
    assert status["schemaVersion"] == 0
    assert "no host has started on it" in status["problem"]
    await migrate(pg_pool, PG_MIGRATIONS[:2])
    older = await fleet_status(pg_pool, alive_seconds=30)
    assert "version 2, older than this ishiki reads" in older["problem"]
    assert "hosts" not in older


async def test_read_fleet_names_the_server_never_the_password(postgres_url: str, tmp_path: Any) -> None:
    async def migrated() -> None:
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(postgres_url, open=False, kwargs={"autocommit": True})
        await pool.open(wait=True)
        try:
            await migrate(pool)
        finally:
            await pool.close()

    await migrated()
    found = await read_fleet(postgres_url, alive_seconds=30)
    assert found["store"] == postgres_url
    assert found["hosts"] == []
    url = f"postgresql://ishiki:sekrit@/nope?host={tmp_path}"  # no server on that socket
    missing = await read_fleet(url, alive_seconds=30, answer_seconds=5)
    assert set(missing) == {"store", "error"}
    assert missing["store"] == f"postgresql://ishiki:***@/nope?host={tmp_path}"
    assert missing["store"] in missing["error"]
    assert "sekrit" not in missing["error"]
