"""The fact log on a real PostgreSQL: the file log's contract (ids, entries as written, newest-first reads of
any depth, durability by policy, a reopened log going on where it was), and writes fenced by the runtime's lease."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.core.clock import FakeClock
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


async def test_entries_read_back_as_written_at_any_depth_and_after_a_reopen(
    pg_pool: AsyncConnectionPool[Any],
) -> None:
    book = await book_of(pg_pool)
    lease = await book.acquire(f"runtime:{KEY}")
    assert lease is not None
    log = await PgFactLog.open(book, lease, KEY, clock=FakeClock(), cache_size=4)
    first = await log.append("message", {"role": "user", "parts": [{"type": "text", "text": "hi \ud83d"}]})
    assert first.id == 1
    assert first.data["parts"] == [{"type": "text", "text": "hi \ufffd"}]  # a lone surrogate stored as U+FFFD
    written = [first] + await log.append_many([("event", {"n": n}) for n in range(700)], turn=1)
    assert log.last_id == 701
    assert await log.read_back(newest(3)) == written[-1:-4:-1]  # from the cache
    assert await log.read_back(newest(1000)) == written[::-1]  # past it: pages of 256, 512
    assert log.tail(2) == written[-2:]

    again = await PgFactLog.open(book, lease, KEY, cache_size=4)
    assert again.last_id == 701
    assert await again.read_back(newest(1000)) == written[::-1]
    more = await again.append("event", {"n": "after"})
    assert more.id == 702
    uncached = await PgFactLog.open(book, lease, KEY, cache_size=0)
    assert await uncached.read_back(newest(2)) == [more, written[-1]]  # nothing cached: all from the table


async def test_durability_follows_the_policy(pg_pool: AsyncConnectionPool[Any]) -> None:
    book = await book_of(pg_pool)
    lease = await book.acquire(f"runtime:{KEY}")
    assert lease is not None
    log = await PgFactLog.open(book, lease, KEY)  # turn
    await log.append("message", {"text": "inbound"})
    assert log.durable_id == 1  # outside a turn: durable when it returns
    await log.append_many([("message", {"text": "step"}), ("event", {"name": "x"})], turn=1, sync=False)
    assert (log.last_id, log.durable_id) == (3, 1)  # committed and readable, not yet waited for
    await log.sync(upto=1)
    assert log.durable_id == 1  # already so: nothing to do
    await log.sync()
    assert log.durable_id == 3
    never = await PgFactLog.open(book, lease, "ana/other", fsync="never")
    await never.append("message", {"text": "x"})
    await never.sync()
    assert never.durable_id == 0
    with pytest.raises(ValueError, match="fsync policy must be one of always, turn, never; got 'sometimes'"):
        await PgFactLog.open(book, lease, KEY, fsync="sometimes")  # type: ignore[arg-type]


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
