"""Leases on PostgreSQL: at most one host serves a name at a time, and a host that lost its lease writes nothing.

    book = LeaseBook(pool, holder="host-a", seconds=10)
    await book.setup()
    lease = await book.acquire("runtime:ana/telegram:1/private:42")   # None: another host holds it
    async with book.fenced(lease) as conn:                           # LeaseLost: it is no longer ours
        await conn.execute("INSERT INTO ...")                         # commits only while the lease holds
    lease = await book.renew(lease)                                   # None: lost (expired, taken over)

A lease is a row of ``ishiki_leases``: the name, its holder, a fencing token and when it expires. Time is the
database's (``clock_timestamp()``), never a host's, so a host whose clock is skewed neither keeps a lease past
its end nor takes one early. The token comes from one sequence and changes whenever the name changes hands
(renewing keeps it), so a write made under an older token is recognisable.

``fenced`` opens a transaction that first checks the lease (holder, token, not expired) and takes a share lock on
its row. A takeover updates that row, so it waits until the fenced transaction ends; and once it is done, the
old holder's next ``fenced`` fails the check. So two holders never write under one name at once, even when a
host is paused (SIGSTOP, a VM frozen) in the middle of a transaction: its connection sets
``idle_in_transaction_session_timeout`` to the lease period, so the server ends a transaction that stopped
moving, the lock goes with it, and the paused host's commit fails when it wakes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host.errors import FactLogError, StoreError
from ishiki_host.store.pg.schema import migrate

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["RUNTIME_LEASE", "Lease", "LeaseBook", "LeaseLost", "runtime_lease_name"]

RUNTIME_LEASE = "runtime:"
"""The prefix of a runtime's lease name: ``runtime:<runtime key>`` (``runtime_lease_name``)."""

_ACQUIRE = """
INSERT INTO ishiki_leases AS held (name, holder, token, expires_at)
VALUES (%(name)s, %(holder)s, nextval('ishiki_lease_tokens'), clock_timestamp() + %(seconds)s * interval '1 second')
ON CONFLICT (name) DO UPDATE SET
    holder = EXCLUDED.holder,
    token = CASE WHEN held.holder = EXCLUDED.holder AND held.expires_at > clock_timestamp()
                 THEN held.token ELSE EXCLUDED.token END,
    expires_at = EXCLUDED.expires_at
WHERE held.expires_at <= clock_timestamp() OR held.holder = EXCLUDED.holder
RETURNING name, holder, token, extract(epoch FROM expires_at)::float8
"""

_RENEW = """
UPDATE ishiki_leases SET expires_at = clock_timestamp() + %(seconds)s * interval '1 second'
WHERE name = %(name)s AND holder = %(holder)s AND token = %(token)s AND expires_at > clock_timestamp()
RETURNING name, holder, token, extract(epoch FROM expires_at)::float8
"""

_RENEW_MANY = """
UPDATE ishiki_leases AS held SET expires_at = clock_timestamp() + %(seconds)s * interval '1 second'
FROM unnest(%(names)s::text[], %(tokens)s::bigint[]) AS mine(name, token)
WHERE held.name = mine.name AND held.token = mine.token AND held.holder = %(holder)s
  AND held.expires_at > clock_timestamp()
RETURNING held.name, held.holder, held.token, extract(epoch FROM held.expires_at)::float8
"""

_CHECK = """
SELECT 1 FROM ishiki_leases
WHERE name = %(name)s AND holder = %(holder)s AND token = %(token)s AND expires_at > clock_timestamp()
FOR SHARE
"""

_CURRENT = """
SELECT name, holder, token, extract(epoch FROM expires_at)::float8 FROM ishiki_leases
WHERE name = %(name)s AND expires_at > clock_timestamp()
"""


def runtime_lease_name(key: str) -> str:
    """The name of the lease whose holder serves the runtime at ``key`` (a ``RuntimeKey``'s text)."""
    return RUNTIME_LEASE + key


class LeaseLost(FactLogError, StoreError):
    """A write under a lease its host no longer holds (it expired, or another host took the name over).

    A ``FactLogError`` too: a runtime whose log refuses an append for this reason stops and sends no apology
    (``runtime.apology``), and a channel handing in an event is told to try again (``Host.dispatch``), which
    reaches the host that serves the runtime now."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease as last granted: ``name`` is held by ``holder`` with fencing ``token`` until ``expires_at`` (Unix
    seconds on the database's clock)."""

    name: str
    holder: str
    token: int
    expires_at: float


class LeaseBook:
    """The leases of one host, ``holder``, each ``seconds`` long, in the database of ``pool`` (see the module
    docstring)."""

    def __init__(self, pool: AsyncConnectionPool[Any], holder: str, *, seconds: float):
        if not holder:
            raise ValueError("a lease holder needs a name")
        if seconds <= 0:
            raise ValueError(f"a lease lasts a positive number of seconds, not {seconds}")
        self.pool = pool
        self.holder = holder
        self.seconds = seconds

    async def setup(self) -> None:
        """Bring the database to the fleet's schema (``schema.migrate``: the leases' table among the rest)."""
        await migrate(self.pool)

    async def acquire(self, name: str) -> Lease | None:
        """The lease on ``name`` for this host: granted when nobody holds it or its lease expired, renewed (same
        token) when this host holds it already; ``None`` while another host holds it."""
        return await self._one(_ACQUIRE, {"name": name, "holder": self.holder, "seconds": self.seconds})

    async def renew(self, lease: Lease) -> Lease | None:
        """``lease`` for another period from now; ``None`` when it is lost (expired, or taken over)."""
        params = {"name": lease.name, "holder": lease.holder, "token": lease.token, "seconds": self.seconds}
        return await self._one(_RENEW, params)

    async def renew_many(self, leases: Sequence[Lease]) -> dict[str, Lease]:
        """Each of ``leases`` for another period from now, in one statement; those renewed by name (one that is
        missing is lost: expired, or taken over)."""
        if not leases:
            return {}
        params = {
            "names": [lease.name for lease in leases],
            "tokens": [lease.token for lease in leases],
            "holder": self.holder,
            "seconds": self.seconds,
        }
        async with self.pool.connection() as conn:
            cursor = await conn.execute(_RENEW_MANY, params)
            rows = await cursor.fetchall()
        return {str(name): Lease(str(name), str(holder), int(token), float(ends)) for name, holder, token, ends in rows}

    async def release(self, lease: Lease) -> None:
        """Give ``lease`` up at once (another host may take the name without waiting for it to expire)."""
        async with self.pool.connection() as conn:
            await conn.execute(
                "DELETE FROM ishiki_leases WHERE name = %s AND holder = %s AND token = %s",
                (lease.name, lease.holder, lease.token),
            )

    async def expired(self, prefix: str, *, limit: int = 100) -> list[str]:
        """The names starting with ``prefix`` whose lease ran out without being given up (``release`` deletes
        the row): what a host that died, or froze, held. Oldest first."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT name FROM ishiki_leases WHERE starts_with(name, %s) AND expires_at <= clock_timestamp() "
                "ORDER BY expires_at LIMIT %s",
                (prefix, limit),
            )
            return [str(row[0]) for row in await cursor.fetchall()]

    async def current(self, name: str) -> Lease | None:
        """The live lease on ``name``, whoever holds it; ``None`` when nobody does."""
        return await self._one(_CURRENT, {"name": name})

    @asynccontextmanager
    async def fenced(self, lease: Lease) -> AsyncIterator[AsyncConnection[Any]]:
        """A transaction whose writes commit only while ``lease`` holds (see the module docstring);
        ``LeaseLost`` when it no longer does."""
        async with self.pool.connection() as conn, conn.transaction():
            milliseconds = max(1, round(self.seconds * 1000))
            await conn.execute(f"SET LOCAL idle_in_transaction_session_timeout = {milliseconds}")
            params = {"name": lease.name, "holder": lease.holder, "token": lease.token}
            checked = await conn.execute(_CHECK, params)
            if await checked.fetchone() is None:
                raise LeaseLost(f"the lease on {lease.name!r} (token {lease.token}) is no longer {self.holder}'s")
            yield conn

    async def _one(self, sql: str, params: dict[str, Any]) -> Lease | None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(sql, params)
            row = await cursor.fetchone()
        if row is None:
            return None
        name, holder, token, expires_at = row
        return Lease(str(name), str(holder), int(token), float(expires_at))
