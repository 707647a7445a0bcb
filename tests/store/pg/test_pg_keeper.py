"""The lease keeper on a real PostgreSQL: renewals keep a lease, a refusal loses it at once, and a database that
stops answering loses it once the lease may be over on the host's own clock, never later."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.core.clock import FakeClock
from ishiki_host.store.pg.keeper import LeaseKeeper
from ishiki_host.store.pg.leases import LeaseBook
from ishiki_host.testing.postgres import PostgresServer

pytestmark = pytest.mark.anyio

NAME = "account:whatsapp:4915100000000"


async def test_the_keeper_renews_what_it_holds(pg_pool: AsyncConnectionPool[Any]) -> None:
    clock, lost = FakeClock(), list[str]()
    book = LeaseBook(pg_pool, "host-a", seconds=30)
    await book.setup()
    keeper = LeaseKeeper(book, clock=clock, on_lost=lost.append)
    first = await keeper.hold(NAME)
    assert first is not None
    assert await LeaseBook(pg_pool, "host-b", seconds=30).acquire(NAME) is None
    async with anyio.create_task_group() as tg:
        await tg.start(keeper.run)
        await clock.advance(10)  # a third of the period: the first renewal
        deadline = time.monotonic() + 60  # the renewal is a real round trip; a cap only as a last resort
        while (keeper.lease(NAME) or first).expires_at == first.expires_at:
            assert time.monotonic() < deadline, "timed out: the keeper never renewed"
            await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    renewed = keeper.lease(NAME)
    assert renewed is not None
    assert renewed.token == first.token
    assert await book.current(NAME) == renewed
    assert lost == []
    await keeper.release(NAME)
    assert await book.current(NAME) is None
    assert keeper.names == []


async def test_a_refused_renewal_loses_the_lease_at_once(pg_pool: AsyncConnectionPool[Any]) -> None:
    clock, lost = FakeClock(), list[str]()
    book = LeaseBook(pg_pool, "host-a", seconds=30)
    await book.setup()
    keeper = LeaseKeeper(book, clock=clock, on_lost=lost.append)
    lease = await keeper.hold(NAME)
    assert lease is not None
    async with pg_pool.connection() as conn:  # as if it had expired and host-b had taken the name over
        await conn.execute("UPDATE ishiki_leases SET holder = 'host-b', token = token + 1000 WHERE name = %s", (NAME,))
    await keeper.renew_all()
    assert lost == [NAME]
    assert keeper.lease(NAME) is None
    assert keeper.names == []


async def test_a_silent_database_loses_the_lease_when_it_may_be_over_and_not_before(
    pg_pool: AsyncConnectionPool[Any], postgres: PostgresServer
) -> None:
    clock, lost = FakeClock(), list[str]()
    book = LeaseBook(pg_pool, "host-a", seconds=3)  # a call waits at most 1 s of real time for its answer
    await book.setup()
    keeper = LeaseKeeper(book, clock=clock, on_lost=lost.append)
    lease = await keeper.hold(NAME)
    assert lease is not None
    postgres.pause()
    try:
        await clock.advance(1)
        await keeper.renew_all()  # no answer, but the lease may still hold: kept
        assert lost == []
        assert keeper.lease(NAME) == lease
        await clock.advance(2)  # 3 s since the grant was asked for: it may be over on the database's clock
        assert keeper.lease(NAME) is None  # no write may count on it from now on
        await keeper.renew_all()
        assert lost == [NAME]
    finally:
        postgres.resume()
    assert keeper.names == []
