"""The fact log on a real PostgreSQL, where it differs from the file log: writes fenced by the runtime's lease, one
writer per runtime by the table's key, a cache bounded by its lines' size. The contract both logs keep is tested
against both in ``tests/store/test_factlog_contract.py``."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.core.entries import Entry
from ishiki_host.errors import FactLogError
from ishiki_host.store.pg.facts import PgFactLog
from ishiki_host.store.pg.leases import LeaseBook, LeaseLost

pytestmark = pytest.mark.anyio

KEY = "ana/telegram:1/private:42"


async def book_of(pool: AsyncConnectionPool[Any], holder: str = "host-a") -> LeaseBook:
    book = LeaseBook(pool, holder, seconds=30)
    await book.setup()
    await PgFactLog.setup(book)
    return book


def newest(n: int) -> Any:
    def select(entries: Iterator[Entry]) -> list[Entry]:
        return list(islice(entries, n))

    return select


async def test_a_host_that_lost_the_lease_writes_nothing_and_the_new_owner_goes_on(
    pg_pool: AsyncConnectionPool[Any],
) -> None:
    a, b = await book_of(pg_pool, "host-a"), await book_of(pg_pool, "host-b")
    old = await a.acquire(f"runtime:{KEY}")
    assert old is not None
    log_a = await PgFactLog.open(a, old, KEY)
    await log_a.append("message", {"text": "to host-a"})
    await a.release(old)  # as if it had expired
    new = await b.acquire(f"runtime:{KEY}")
    assert new is not None
    log_b = await PgFactLog.open(b, new, KEY)
    with pytest.raises(LeaseLost):
        await log_a.append("message", {"text": "late, from host-a"})
    assert log_a.closed
    with pytest.raises(FactLogError, match="closed"):
        await log_a.append("message", {"text": "later still"})
    await log_b.append("message", {"text": "to host-b"})
    texts = [e.data["text"] for e in await log_b.read_back(newest(10))]
    assert texts == ["to host-b", "to host-a"]


async def test_two_writers_under_one_lease_cannot_interleave(pg_pool: AsyncConnectionPool[Any]) -> None:
    book = await book_of(pg_pool)
    lease = await book.acquire(f"runtime:{KEY}")
    assert lease is not None
    one = await PgFactLog.open(book, lease, KEY)
    two = await PgFactLog.open(book, lease, KEY)  # a bug: a second log object of the same runtime
    await one.append("message", {"text": "one"})
    with pytest.raises(FactLogError, match=r"cannot append to the fact log of ana/telegram:1/private:42: .*duplicate"):
        await two.append("message", {"text": "two"})  # its id 1 is taken: refused, not interleaved


async def test_a_lost_lease_refuses_the_commit_that_makes_a_turn_durable_and_the_log_still_closes(
    pg_pool: AsyncConnectionPool[Any],
) -> None:
    book = await book_of(pg_pool)
    lease = await book.acquire(f"runtime:{KEY}")
    assert lease is not None
    log = await PgFactLog.open(book, lease, KEY)
    closed: list[bool] = []

    async def on_close() -> None:
        closed.append(log.closed)

    log.on_close(on_close)
    await log.append("message", {"text": "step"}, turn=1)  # committed, not yet waited for
    await book.release(lease)
    await log.close()  # its sync is fenced too: refused, said in the log, and the log closes (the lease is gone)
    assert (log.closed, log.durable_id, closed) == (True, 0, [True])
    await log.close()  # closed already: nothing to do
    with pytest.raises(LeaseLost):
        await PgFactLog.open(book, lease, KEY)  # opening makes what is there durable: under the lease only


async def test_the_cache_grows_no_further_than_its_bytes_allow(pg_pool: AsyncConnectionPool[Any]) -> None:
    book = await book_of(pg_pool)
    lease = await book.acquire(f"runtime:{KEY}")
    assert lease is not None
    log = await PgFactLog.open(book, lease, KEY, cache_size=2, max_cache_bytes=2000)
    written = await log.append_many([("event", {"n": n, "pad": "x" * 100}) for n in range(100)], turn=1)
    assert await log.read_back(newest(50)) == written[-1:-51:-1]
    assert 2 < log.cached < 20  # lines of some 150 bytes: a dozen of them fit
    with pytest.raises(ValueError, match="max_cache_bytes must be >= 1"):
        await PgFactLog.open(book, lease, KEY, max_cache_bytes=0)
