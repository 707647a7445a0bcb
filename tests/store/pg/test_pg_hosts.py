"""The fleet's hosts on a real PostgreSQL: registered, seen at each beat, stopped on a clean stop, told alive or dead on
the database's clock; a beat the database refuses is logged and the next one gets through."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host._version import __version__
from ishiki_host.core.clock import FakeClock
from ishiki_host.store.pg.fleetview import fleet_status
from ishiki_host.store.pg.hosts import HostBook

pytestmark = pytest.mark.anyio


async def row(pool: AsyncConnectionPool[Any], holder: str) -> dict[str, Any] | None:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT name, pid, version, started_at, seen_at, stopped_at FROM ishiki_hosts WHERE holder = %s", (holder,)
        )
        found = await cursor.fetchone()
    keys = ("name", "pid", "version", "started_at", "seen_at", "stopped_at")
    return None if found is None else dict(zip(keys, found, strict=True))


async def alive(pool: AsyncConnectionPool[Any], alive_seconds: float = 30) -> dict[str, bool]:
    status = await fleet_status(pool, alive_seconds=alive_seconds)
    return {host["holder"]: host["alive"] for host in status["hosts"]}


async def test_register_beat_and_stop(pg_pool: AsyncConnectionPool[Any]) -> None:
    book = HostBook(pg_pool, "web-1/3f2a9c1d", "web-1", pid=4321)
    await book.setup()
    await book.register()
    first = await row(pg_pool, book.holder)
    assert first is not None
    assert (first["name"], first["pid"], first["version"], first["stopped_at"]) == ("web-1", 4321, __version__, None)
    assert first["started_at"] == first["seen_at"]  # one instant of the database
    assert await alive(pg_pool) == {"web-1/3f2a9c1d": True}

    await book.beat()
    beaten = await row(pg_pool, book.holder)
    assert beaten is not None
    assert beaten["started_at"] == first["started_at"]
    assert beaten["seen_at"] > first["seen_at"]  # the database's clock moved on

    await book.stopped()
    stopped = await row(pg_pool, book.holder)
    assert stopped is not None
    assert stopped["stopped_at"] is not None
    assert stopped["stopped_at"] >= beaten["seen_at"]
    assert await alive(pg_pool) == {"web-1/3f2a9c1d": False}  # seen a moment ago, but it said it stopped

    await book.register()  # the same holder again: it starts afresh
    again = await row(pg_pool, book.holder)
    assert again is not None
    assert again["stopped_at"] is None
    assert again["started_at"] > first["started_at"]


async def test_a_host_not_seen_within_the_window_is_dead(pg_pool: AsyncConnectionPool[Any]) -> None:
    living, dead = HostBook(pg_pool, "a/1", "a"), HostBook(pg_pool, "b/2", "b")
    await living.setup()
    await living.register()
    await dead.register()
    async with pg_pool.connection() as conn:  # b last beat a minute ago on the database's clock
        await conn.execute("UPDATE ishiki_hosts SET seen_at = clock_timestamp() - interval '60 s' WHERE holder = 'b/2'")
    assert await alive(pg_pool, alive_seconds=30) == {"a/1": True, "b/2": False}
    assert await alive(pg_pool, alive_seconds=120) == {"a/1": True, "b/2": True}
    status = await fleet_status(pg_pool, alive_seconds=30)
    seen = {host["holder"]: host["seenSecondsAgo"] for host in status["hosts"]}
    assert 60 <= seen["b/2"] < 90
    assert 0 <= seen["a/1"] < 30
    assert [host["holder"] for host in status["hosts"]] == ["a/1", "b/2"]  # the living first

    await dead.beat()  # it came back
    assert await alive(pg_pool, alive_seconds=30) == {"a/1": True, "b/2": True}


async def test_a_beat_brings_back_a_deleted_row(pg_pool: AsyncConnectionPool[Any]) -> None:
    book = HostBook(pg_pool, "c/3", "c")
    await book.setup()
    await book.register()
    async with pg_pool.connection() as conn:
        await conn.execute("DELETE FROM ishiki_hosts")
    await book.beat()
    back = await row(pg_pool, "c/3")
    assert back is not None
    assert back["name"] == "c"


async def test_register_forgets_hosts_long_gone(pg_pool: AsyncConnectionPool[Any]) -> None:
    old, new = HostBook(pg_pool, "old/1", "old"), HostBook(pg_pool, "new/2", "new", forget_seconds=3600)
    await old.setup()
    await old.register()
    async with pg_pool.connection() as conn:
        await conn.execute("UPDATE ishiki_hosts SET seen_at = clock_timestamp() - interval '2 hours'")
    await new.register()
    assert await row(pg_pool, "old/1") is None
    assert await row(pg_pool, "new/2") is not None


async def test_run_beats_on_its_clock_and_a_failed_beat_is_only_logged(
    pg_pool: AsyncConnectionPool[Any], caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    book = HostBook(pg_pool, "d/4", "d")
    await book.setup()
    await book.register()
    registered = await row(pg_pool, "d/4")
    assert registered is not None
    with anyio.fail_after(30):  # a cap as a last resort
        async with anyio.create_task_group() as tg:
            await tg.start(book.run, clock, 5.0)
            await clock.wait_for_sleepers()
            async with pg_pool.connection() as conn:  # the database refuses the next beat
                await conn.execute("ALTER TABLE ishiki_hosts RENAME TO ishiki_hosts_away")
            with caplog.at_level(logging.WARNING, logger="ishiki_host.store.pg.hosts"):
                await clock.advance(5)
                await clock.wait_for_sleepers()  # the beat failed, and the loop went on
            assert any("did not take a beat" in r.getMessage() for r in caplog.records)
            async with pg_pool.connection() as conn:
                await conn.execute("ALTER TABLE ishiki_hosts_away RENAME TO ishiki_hosts")
            await clock.advance(5)
            await clock.wait_for_sleepers()
            tg.cancel_scope.cancel()
    beaten = await row(pg_pool, "d/4")
    assert beaten is not None
    assert beaten["seen_at"] > registered["seen_at"]


def test_a_host_needs_a_holder() -> None:
    with pytest.raises(ValueError, match="holder"):
        HostBook(None, "", "x")  # type: ignore[arg-type]
