"""A real PostgreSQL for the store's PostgreSQL side (``pg/``, and the contract suites run against both stores): one
throwaway server for the session (started the first time a test asks for it), a fresh database for each test."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.testing.postgres import PostgresServer

_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The session's server (``PostgresUnavailable`` names the package to install when there is none)."""
    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    """The URL of a new, empty database of the session's server."""
    return postgres.create_database(f"test_{next(_numbers)}")


@pytest.fixture
async def pg_pool(postgres_url: str) -> AsyncIterator[AsyncConnectionPool[Any]]:
    """A connection pool on ``postgres_url`` (autocommit connections: a transaction is asked for where needed)."""
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        postgres_url, min_size=1, max_size=8, open=False, kwargs={"autocommit": True}
    )
    await pool.open(wait=True)
    try:
        yield pool
    finally:
        await pool.close()
