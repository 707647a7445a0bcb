"""The fleet's inbox on a real PostgreSQL: an event put on any host reaches its runtime's owner by NOTIFY (or, when
the notification was missed, by the poll), is taken once, only under the runtime's lease, and comes again to the
next owner when the host that took it died before it was done."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.store.pg.inbox import Inbox
from ishiki_host.store.pg.leases import Lease, LeaseBook

pytestmark = pytest.mark.anyio

KEY = "ana/whatsapp:1/private:42"


async def leased(pool: AsyncConnectionPool[Any], holder: str) -> tuple[LeaseBook, Lease]:
    book = LeaseBook(pool, holder, seconds=30)
    await book.setup()
    lease = await book.acquire(f"runtime:{KEY}")
    assert lease is not None
    return book, lease


async def test_an_event_put_anywhere_reaches_the_owner_once(pg_pool: AsyncConnectionPool[Any]) -> None:
    inbox = Inbox(pg_pool, poll_seconds=60)  # no poll within the test: the notification wakes the owner
    await inbox.setup()
    _, lease = await leased(pg_pool, "host-a")
    arrived: list[str] = []
    with anyio.fail_after(60):  # a cap as a last resort
        async with anyio.create_task_group() as tg:
            listening = anyio.Event()

            def served() -> set[str]:
                listening.set()
                return {KEY}

            got = anyio.Event()

            async def owner() -> None:
                async for key in inbox.arrivals(served):
                    arrived.append(key)
                    got.set()

            tg.start_soon(owner)
            await listening.wait()  # it asked what it serves: it listens
            await anyio.wait_all_tasks_blocked()
            first = await inbox.put(KEY, '{"text": "hello"}')  # as host-b's webhook would
            await got.wait()  # (not cancelled from the owner: that could cut the put's answer short)
            tg.cancel_scope.cancel()
    assert set(arrived) == {KEY}  # (the first look and the notification may both have seen it: taken once)
    items = await inbox.take(KEY, lease)
    assert [(i.seq, i.body) for i in items] == [(first, '{"text": "hello"}')]
    assert await inbox.take(KEY, lease) == []  # taken once
    await inbox.done(items)
    async with pg_pool.connection() as conn:
        assert await (await conn.execute("SELECT count(*) FROM ishiki_inbox")).fetchone() == (0,)


async def test_what_came_while_nobody_listened_arrives_by_the_first_look_and_by_the_poll(
    pg_pool: AsyncConnectionPool[Any],
) -> None:
    inbox = Inbox(pg_pool, poll_seconds=0.2)
    await inbox.setup()
    await inbox.put(KEY, "before anyone listened")
    arrived: list[str] = []
    with anyio.fail_after(60):  # a cap as a last resort
        async for key in inbox.arrivals(lambda: {KEY}):
            arrived.append(key)  # the first look at what waits
            break
        async with anyio.create_task_group() as tg:
            listening = anyio.Event()

            def served() -> set[str]:
                listening.set()
                return {KEY}

            async def without_notification() -> None:  # as when the listening connection broke meanwhile
                await listening.wait()
                async with pg_pool.connection() as conn:
                    await conn.execute("DELETE FROM ishiki_inbox")
                    await conn.execute("INSERT INTO ishiki_inbox (runtime_key, body) VALUES (%s, 'missed')", (KEY,))

            tg.start_soon(without_notification)
            async for key in inbox.arrivals(served):
                if [i.body for i in await inbox.take(KEY, (await leased(pg_pool, "host-a"))[1])] == ["missed"]:
                    arrived.append(key)  # the poll found it
                    break
    assert arrived == [KEY, KEY]


async def test_only_the_lease_holder_takes_and_a_dead_owners_events_come_again(
    pg_pool: AsyncConnectionPool[Any],
) -> None:
    inbox = Inbox(pg_pool)
    await inbox.setup()
    book_a, lease_a = await leased(pg_pool, "host-a")
    for text in ("one", "two", "three"):
        await inbox.put(KEY, text)
    async with anyio.create_task_group() as tg:  # two takers at once under one lease: each event to one of them
        results: list[list[str]] = []

        async def taker() -> None:
            results.append([i.body for i in await inbox.take(KEY, lease_a, limit=2)])

        tg.start_soon(taker)
        tg.start_soon(taker)
    assert sorted(body for taken in results for body in taken) == ["one", "three", "two"]
    await book_a.release(lease_a)  # host-a died before it was done with them
    assert await inbox.take(KEY, lease_a) == []  # a lease no longer held takes nothing
    _, lease_b = await leased(pg_pool, "host-b")
    again = await inbox.take(KEY, lease_b)
    assert [i.body for i in again] == ["one", "two", "three"]  # oldest first, to the next owner
