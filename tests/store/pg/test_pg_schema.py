"""The fleet's schema on a real PostgreSQL: versioned, brought up once however many hosts start at once, and a
database of a newer version refused with both versions named before anything is written."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.errors import StoreError
from ishiki_host.store.migrations import Migration
from ishiki_host.store.pg.schema import PG_MIGRATIONS, SCHEMA_VERSION, migrate, schema_version

pytestmark = pytest.mark.anyio


async def tables(pool: AsyncConnectionPool[Any]) -> set[str]:
    async with pool.connection() as conn:
        rows = await (await conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).fetchall()
    return {row[0] for row in rows}


async def test_an_empty_database_is_brought_to_the_current_version_once(pg_pool: AsyncConnectionPool[Any]) -> None:
    assert await schema_version(pg_pool) == 0
    assert await migrate(pg_pool) == 0
    assert await schema_version(pg_pool) == SCHEMA_VERSION
    assert SCHEMA_VERSION == 4
    assert {
        "ishiki_leases",
        "ishiki_facts",
        "ishiki_fact_marks",
        "ishiki_inbox",
        "ishiki_hosts",
        "ishiki_beat_slots",
    } <= await tables(pg_pool)
    assert await migrate(pg_pool) == SCHEMA_VERSION  # the second time: nothing to do


async def test_hosts_starting_at_once_take_turns(postgres_url: str) -> None:
    pools = [
        AsyncConnectionPool(postgres_url, min_size=1, max_size=1, open=False, kwargs={"autocommit": True})
        for _ in range(4)
    ]
    for pool in pools:
        await pool.open(wait=True)
    found: list[int] = []
    try:
        with anyio.fail_after(60):  # a cap as a last resort

            async def start(pool: AsyncConnectionPool[Any]) -> None:
                found.append(await migrate(pool))

            async with anyio.create_task_group() as tg:
                for pool in pools:
                    tg.start_soon(start, pool)
    finally:
        for pool in pools:
            await pool.close()
    assert sorted(found) == [0] + [SCHEMA_VERSION] * 3  # one host did the work; the others found it done


async def test_a_newer_schema_is_refused_with_both_versions_named(pg_pool: AsyncConnectionPool[Any]) -> None:
    await migrate(pg_pool)
    async with pg_pool.connection() as conn:
        await conn.execute("UPDATE ishiki_schema SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError) as refused:
        await migrate(pg_pool)
    assert f"version {SCHEMA_VERSION + 1}" in str(refused.value)
    assert f"version {SCHEMA_VERSION})" in str(refused.value)
    assert await schema_version(pg_pool) == SCHEMA_VERSION + 1  # nothing written


async def test_a_failing_step_leaves_the_database_as_it_was(pg_pool: AsyncConnectionPool[Any]) -> None:
    broken = (*PG_MIGRATIONS, Migration(SCHEMA_VERSION + 1, "broken", ("CREATE TABLE ishiki_half (x int)",
                                                                      "SELECT no_such_function()")))  # fmt: skip
    with pytest.raises(Exception, match="no_such_function"):
        await migrate(pg_pool, broken)
    assert await schema_version(pg_pool) == 0  # not even the steps before the broken one
    assert "ishiki_half" not in await tables(pg_pool)
    assert "ishiki_leases" not in await tables(pg_pool)


async def test_version_3_dates_the_events_already_waiting(pg_pool: AsyncConnectionPool[Any]) -> None:
    assert await migrate(pg_pool, PG_MIGRATIONS[:2]) == 0
    async with pg_pool.connection() as conn:
        await conn.execute("INSERT INTO ishiki_inbox (runtime_key, body) VALUES ('ana/x:1/private:1', 'before')")
    assert await migrate(pg_pool) == 2
    async with pg_pool.connection() as conn:
        cursor = await conn.execute("SELECT put_at IS NOT NULL, put_at <= clock_timestamp() FROM ishiki_inbox")
        assert await cursor.fetchall() == [(True, True)]  # the upgrade's time: its true age is unknown
        await conn.execute("INSERT INTO ishiki_inbox (runtime_key, body) VALUES ('ana/x:1/private:1', 'after')")
        cursor = await conn.execute("SELECT count(*) FROM ishiki_inbox WHERE put_at IS NOT NULL")
        assert await cursor.fetchone() == (2,)
