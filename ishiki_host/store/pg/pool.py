"""The connection pool of a host's PostgreSQL ``store``, opened once the database has answered.

    pool = await open_pool("postgresql://ishiki:secret@db/ishiki")   # StoreUnreachable: it says why, and where
    ...
    await pool.close()

Every part of ``ishiki_host.store.pg`` takes a pool whose connections are in autocommit mode; this is that pool.
``open_pool`` waits at most ``connect_seconds`` for the first connection and raises ``StoreUnreachable`` naming
the server (never the password: ``safe_url``) and what the driver said, so ``ishiki run`` refuses to start with a
sentence an operator can act on and ``ishiki doctor`` can say the same. Later connections that fail (the server
restarts, the network drops) are retried by the pool itself; the parts above it see the error of the call that
could not be made, and retry as their own rules say.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ishiki_host.errors import StoreError
from ishiki_host.store.pg.urls import is_postgres_url, safe_url

__all__ = ["StoreUnreachable", "is_postgres_url", "open_pool", "safe_url"]


class StoreUnreachable(StoreError):
    """The PostgreSQL store did not answer (wrong address, refused, bad credentials, no such database)."""


async def open_pool(
    url: str, *, min_size: int = 1, max_size: int = 10, connect_seconds: float = 10.0
) -> AsyncConnectionPool[Any]:
    """An open pool of autocommit connections to ``url`` (see the module docstring)."""
    try:
        # Asked once, before the pool: the driver's own error says why (refused, password, no database),
        # where the pool's wait would only say that it timed out.
        probe = await psycopg.AsyncConnection.connect(url, connect_timeout=max(1, round(connect_seconds)))
    except psycopg.Error as exc:
        raise StoreUnreachable(f"the PostgreSQL store {safe_url(url)} did not answer: {_first_line(exc)}") from None
    await probe.close()
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url, min_size=min_size, max_size=max_size, open=False, kwargs={"autocommit": True}
    )
    try:
        await pool.open(wait=True, timeout=connect_seconds)
    except PoolTimeout:
        await pool.close()
        raise StoreUnreachable(
            f"the PostgreSQL store {safe_url(url)} answered once, then gave no connection within {connect_seconds:g} s"
        ) from None
    return pool


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
