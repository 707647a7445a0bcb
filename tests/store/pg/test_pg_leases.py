"""Leases on a real PostgreSQL: one holder per name, the token that fences writes, expiry on the database's clock,
and a host frozen (SIGSTOP) in the middle of a write that, once it wakes after its lease passed to another host,
gets nothing written."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from psycopg_pool import AsyncConnectionPool

from ishiki_host.store.pg.leases import Lease, LeaseBook, LeaseLost

pytestmark = pytest.mark.anyio

NAME = "runtime:ana/telegram:1/private:42"


async def until_granted(book: LeaseBook, name: str, cap: float = 60.0) -> Lease:
    """``book.acquire(name)`` until it is granted: the lease before it ends on the database's clock. A cap only
    as a last resort."""
    deadline = time.monotonic() + cap
    while (lease := await book.acquire(name)) is None:
        assert time.monotonic() < deadline, f"timed out: {name} was never granted to {book.holder}"
        await anyio.sleep(0.05)
    return lease


async def test_one_holder_at_a_time_and_renewing_keeps_the_token(pg_pool: AsyncConnectionPool[Any]) -> None:
    a, b = LeaseBook(pg_pool, "host-a", seconds=30), LeaseBook(pg_pool, "host-b", seconds=30)
    await a.setup()
    await b.setup()  # twice is fine
    lease = await a.acquire(NAME)
    assert lease is not None
    assert lease.holder == "host-a"
    assert await b.acquire(NAME) is None  # held
    assert await b.current(NAME) == lease
    again = await a.acquire(NAME)
    renewed = await a.renew(lease)
    assert again is not None
    assert renewed is not None
    assert again.token == renewed.token == lease.token  # still host-a's: the same token
    assert renewed.expires_at >= lease.expires_at
    await a.release(renewed)
    assert await a.current(NAME) is None
    taken = await b.acquire(NAME)
    assert taken is not None
    assert taken.holder == "host-b"
    assert taken.token > lease.token
    assert await a.renew(renewed) is None  # lost


async def test_an_expired_lease_passes_on_and_its_old_holder_can_write_nothing(
    pg_pool: AsyncConnectionPool[Any],
) -> None:
    a, b = LeaseBook(pg_pool, "host-a", seconds=0.3), LeaseBook(pg_pool, "host-b", seconds=30)
    await a.setup()
    async with pg_pool.connection() as conn:
        await conn.execute("CREATE TABLE writes (writer text, token bigint)")
    old = await a.acquire(NAME)
    assert old is not None
    async with a.fenced(old) as conn:
        await conn.execute("INSERT INTO writes VALUES ('host-a', %s)", (old.token,))
    new = await until_granted(b, NAME)  # host-a stopped renewing
    assert new.token > old.token
    assert await a.renew(old) is None
    with pytest.raises(LeaseLost, match=r"runtime:ana/telegram:1/private:42.*no longer host-a's"):
        async with a.fenced(old) as conn:
            await conn.execute("INSERT INTO writes VALUES ('host-a', %s)", (old.token,))
    async with b.fenced(new) as conn:
        await conn.execute("INSERT INTO writes VALUES ('host-b', %s)", (new.token,))
    async with pg_pool.connection() as conn:
        rows = await (await conn.execute("SELECT writer, token FROM writes ORDER BY token")).fetchall()
    assert rows == [("host-a", old.token), ("host-b", new.token)]


async def test_a_takeover_waits_for_the_fenced_write_in_progress(pg_pool: AsyncConnectionPool[Any]) -> None:
    a, b = LeaseBook(pg_pool, "host-a", seconds=0.3), LeaseBook(pg_pool, "host-b", seconds=30)
    await a.setup()
    async with pg_pool.connection() as conn:
        await conn.execute("CREATE TABLE writes (writer text, at timestamptz DEFAULT clock_timestamp())")
    lease = await a.acquire(NAME)
    assert lease is not None
    order: list[str] = []
    writing, finish = anyio.Event(), anyio.Event()

    async def write_slowly() -> None:
        async with a.fenced(lease) as conn:
            await conn.execute("INSERT INTO writes (writer) VALUES ('host-a')")
            writing.set()
            await finish.wait()  # the lease expires meanwhile; the transaction is still moving (not idle)
            await conn.execute("SELECT pg_sleep(0)")
        order.append("host-a committed")

    async def take_over() -> None:
        await writing.wait()
        await until_granted(b, NAME)
        order.append("host-b holds it")

    async with anyio.create_task_group() as tg:
        tg.start_soon(write_slowly)
        tg.start_soon(take_over)
        await writing.wait()
        async with pg_pool.connection() as conn:  # the takeover is blocked on the fenced row, not refused
            blocked = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            deadline = time.monotonic() + 60
            while (await (await conn.execute(blocked)).fetchone() or (0,))[0] == 0:
                assert time.monotonic() < deadline, "timed out: the takeover never waited on the lease's row"
                await anyio.sleep(0.05)
        assert order == []
        finish.set()
    assert order == ["host-a committed", "host-b holds it"]


async def test_a_host_frozen_mid_write_loses_its_lease_and_its_write(
    pg_pool: AsyncConnectionPool[Any], postgres_url: str
) -> None:
    b = LeaseBook(pg_pool, "host-b", seconds=30)
    await b.setup()
    async with pg_pool.connection() as conn:
        await conn.execute("CREATE TABLE writes (writer text, token bigint)")
    command = [sys.executable, str(Path(__file__).with_name("lease_holder.py")), postgres_url, NAME]
    async with await anyio.open_process(command) as holder:
        assert holder.stdin is not None
        assert holder.stdout is not None
        said = BufferedByteReceiveStream(holder.stdout)

        async def line() -> str:
            return (await said.receive_until(b"\n", 4096)).decode()

        try:
            first = await line()
            assert first.startswith("in transaction "), first
            token = int(first.split()[-1])
            os.kill(holder.pid, signal.SIGSTOP)  # frozen inside its fenced transaction, its row written
            taken = await until_granted(b, NAME)  # the server ended the stalled transaction: the row lock went
            assert taken.token > token
            async with b.fenced(taken) as conn:
                await conn.execute("INSERT INTO writes VALUES ('host-b', %s)", (taken.token,))
            os.kill(holder.pid, signal.SIGCONT)
            await holder.stdin.send(b"wake up\n")
            assert (await line()).startswith("commit failed")
            assert await line() == "lease lost"
            assert await holder.wait() == 0
        finally:
            if holder.returncode is None:
                os.kill(holder.pid, signal.SIGCONT)
                holder.kill()
    async with pg_pool.connection() as conn:
        rows = await (await conn.execute("SELECT writer, token FROM writes")).fetchall()
    assert rows == [("host-b", taken.token)]  # nothing of the frozen host's


async def test_renewing_many_leases_in_one_statement_keeps_what_is_still_held(
    pg_pool: AsyncConnectionPool[Any],
) -> None:
    a, b = LeaseBook(pg_pool, "host-a", seconds=30), LeaseBook(pg_pool, "host-b", seconds=30)
    await a.setup()
    kept, lost = await a.acquire("runtime:one"), await a.acquire("runtime:two")
    assert kept is not None
    assert lost is not None
    async with pg_pool.connection() as conn:  # "two" ran out, and host b took it
        await conn.execute("UPDATE ishiki_leases SET expires_at = clock_timestamp() WHERE name = 'runtime:two'")
    assert await b.acquire("runtime:two") is not None
    renewed = await a.renew_many([kept, lost])
    assert list(renewed) == ["runtime:one"]
    assert renewed["runtime:one"].token == kept.token
    assert renewed["runtime:one"].expires_at >= kept.expires_at
    assert await a.renew_many([]) == {}
