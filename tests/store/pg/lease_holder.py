"""A host holding a lease, for ``test_pg_leases``: ``python lease_holder.py URL NAME``.

It takes the lease on NAME (1 s), opens a fenced transaction, writes its row and says ``in transaction <token>``;
then it waits for a line on stdin inside that transaction (the test freezes it there with SIGSTOP), tries to
commit, and says what became of the commit and of a second fenced write.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import anyio.to_thread
from psycopg_pool import AsyncConnectionPool

from ishiki_host.store.pg.leases import LeaseBook, LeaseLost


async def main(url: str, name: str) -> None:
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(url, min_size=1, open=False, kwargs={"autocommit": True})
    await pool.open(wait=True)
    book = LeaseBook(pool, "host-a", seconds=1.0)
    lease = await book.acquire(name)
    assert lease is not None
    try:
        async with book.fenced(lease) as conn:
            await conn.execute("INSERT INTO writes (writer, token) VALUES ('host-a', %s)", (lease.token,))
            print(f"in transaction {lease.token}", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)
        print("committed", flush=True)
    except Exception as exc:
        print(f"commit failed: {type(exc).__name__}", flush=True)
    try:
        async with book.fenced(lease) as conn:
            await conn.execute("INSERT INTO writes (writer, token) VALUES ('host-a', %s)", (lease.token,))
        print("wrote again", flush=True)
    except LeaseLost:
        print("lease lost", flush=True)
    await pool.close()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
