"""The fleet's inbox: an event lands on any host, is stored durably, and reaches the host that serves its runtime.

    inbox = Inbox(pool)
    await inbox.setup()
    await inbox.put("ana/whatsapp:1/private:42", body)        # any host: durable when it returns; owner notified
    async for key in inbox.arrivals(keys_i_serve):            # the owner: woken by NOTIFY, or by the poll
        items = await inbox.take(key, lease)                  # oldest first, under the runtime's lease
        ...                                                   # recorded in the runtime's fact log, then
        await inbox.done(items)

A webhook may reach any host behind the load balancer: that host ``put``s the event (a row of ``ishiki_inbox``;
the platform may be told 200 once it returns) and the same transaction notifies channel ``ishiki_inbox`` with the
runtime key, delivered on commit. The host that holds the runtime's lease listens (``arrivals``) and ``take``s what
waits for a key it serves, oldest first: one statement that checks the lease as the fact log's appends do and
marks the rows taken, so two hosts never take one event and a host that lost the lease takes nothing. A
notification can be missed (the listening connection broke, the owner was starting): ``arrivals`` also yields,
every ``poll_seconds``, each served key with events in the table, so nothing waits longer than that. The owner
records a taken event in the runtime's fact log before acting on it, then says it is ``done`` (the row goes); an
event taken under an older lease of its key (by a host that died before it was done) is taken again by the next
owner, and the runtime recognises one it had recorded, so nothing is lost and nothing is answered twice.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

import anyio
import psycopg
from psycopg_pool import AsyncConnectionPool

from ishiki_host.store.pg.leases import Lease
from ishiki_host.store.pg.schema import migrate

__all__ = ["CHANNEL", "Inbox", "InboxItem"]

logger = logging.getLogger(__name__)

CHANNEL = "ishiki_inbox"
_PUT = """
WITH stored AS (INSERT INTO ishiki_inbox (runtime_key, body) VALUES (%(key)s, %(body)s) RETURNING seq)
SELECT seq, pg_notify('ishiki_inbox', %(key)s) FROM stored
"""
_TAKE = """
WITH held AS (
    SELECT 1 FROM ishiki_leases
    WHERE name = %(lease)s AND holder = %(holder)s AND token = %(token)s AND expires_at > clock_timestamp()
    FOR SHARE
), waiting AS (
    SELECT seq FROM ishiki_inbox, held
    WHERE runtime_key = %(key)s AND (taken_token IS NULL OR taken_token < %(token)s)
    ORDER BY seq LIMIT %(limit)s FOR UPDATE OF ishiki_inbox SKIP LOCKED
)
UPDATE ishiki_inbox SET taken_token = %(token)s FROM waiting WHERE ishiki_inbox.seq = waiting.seq
RETURNING ishiki_inbox.seq, ishiki_inbox.body
"""
_WAITING = "SELECT DISTINCT runtime_key FROM ishiki_inbox WHERE runtime_key = ANY(%s)"
# The keys with events that ``holder`` may take now: waiting (never taken, or taken under a lease that is over),
# and whose runtime is served by nobody else (no live lease, or ``holder``'s own).
_OPEN = """
SELECT DISTINCT waiting.runtime_key FROM ishiki_inbox AS waiting
WHERE NOT EXISTS (
    SELECT 1 FROM ishiki_leases AS lease
    WHERE lease.name = 'runtime:' || waiting.runtime_key AND lease.expires_at > clock_timestamp()
      AND (lease.holder <> %(holder)s OR lease.token = waiting.taken_token)
)
ORDER BY 1 LIMIT %(limit)s
"""


@dataclass(frozen=True, slots=True)
class InboxItem:
    """One event taken for a runtime: its place in the inbox (``seq``, increasing) and what was put."""

    seq: int
    body: str


class Inbox:
    """The inbox of the fleet's database (see the module docstring)."""

    def __init__(self, pool: AsyncConnectionPool[Any], *, poll_seconds: float = 5.0):
        self.pool = pool
        self.poll_seconds = poll_seconds

    async def setup(self) -> None:
        """Bring the database to the fleet's schema (``schema.migrate``: the inbox's table among the rest)."""
        await migrate(self.pool)

    async def put(self, key: str, body: str) -> int:
        """Store ``body`` for runtime ``key`` (durable when this returns) and notify its owner; its ``seq``."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(_PUT, {"key": key, "body": body})
            row = await cursor.fetchone()
        assert row is not None
        return int(row[0])

    async def take(self, key: str, lease: Lease, *, limit: int = 100) -> list[InboxItem]:
        """What waits for runtime ``key``, oldest first, marked as taken under ``lease``; nothing when the lease is
        not held. Events taken under an older lease of the key (a host that died before recording them) come
        again: the runtime recognises one it had recorded."""
        params = {"lease": lease.name, "holder": lease.holder, "token": lease.token, "key": key, "limit": limit}
        async with self.pool.connection() as conn:
            cursor = await conn.execute(_TAKE, params)
            rows = await cursor.fetchall()
        return sorted((InboxItem(int(seq), str(body)) for seq, body in rows), key=lambda item: item.seq)

    async def done(self, items: Collection[InboxItem]) -> None:
        """Forget ``items``: their events are recorded in the runtime's fact log."""
        if items:
            async with self.pool.connection() as conn:
                await conn.execute("DELETE FROM ishiki_inbox WHERE seq = ANY(%s)", ([i.seq for i in items],))

    async def give_back(self, items: Collection[InboxItem]) -> None:
        """Let ``items`` be taken again (their delivery failed here): the next ``take`` of their key, on this host
        or on the next one to serve it, returns them."""
        if items:
            async with self.pool.connection() as conn:
                await conn.execute(
                    "UPDATE ishiki_inbox SET taken_token = NULL WHERE seq = ANY(%s)", ([i.seq for i in items],)
                )

    async def open_keys(self, holder: str, *, limit: int = 500) -> list[str]:
        """The runtime keys with events ``holder`` may take now: waiting, and whose runtime nobody else serves
        (no live lease on it, or ``holder``'s own). A host takes the lease of each and then its events."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(_OPEN, {"holder": holder, "limit": limit})
            return [str(row[0]) for row in await cursor.fetchall()]

    async def wakeups(self, holder: str) -> AsyncIterator[list[str]]:
        """Batches of runtime keys whose events ``holder`` should look at: each key as its notification comes
        (whoever serves it: the caller tells), and every ``poll_seconds`` the ``open_keys`` (what a missed
        notification, or a host that died holding a lease, left waiting). Reconnects when the listening
        connection breaks."""
        async for keys in self._listen(lambda: self.open_keys(holder)):
            yield keys

    async def arrivals(self, served: Callable[[], Collection[str]]) -> AsyncIterator[str]:
        """Runtime keys of ``served()`` with events waiting: each as its notification comes, and every
        ``poll_seconds`` each one the table holds events for (a notification missed while not listening).
        Reconnects when the listening connection breaks."""
        async for keys in self._listen(lambda: self._waiting(served())):
            for key in keys:
                if key in served():
                    yield key

    async def _listen(self, poll: Callable[[], Awaitable[list[str]]]) -> AsyncIterator[list[str]]:
        """What ``poll()`` finds once listening, then each notified key as it comes, with what ``poll()`` finds
        every ``poll_seconds``; listening again when the connection breaks."""
        while True:
            try:
                async with self.pool.connection() as listener:  # held for as long as it listens
                    await listener.execute(f"LISTEN {CHANNEL}")
                    try:
                        polled = anyio.current_time()
                        yield await poll()  # what came while nobody listened
                        while True:
                            notified = listener.notifies(timeout=self.poll_seconds, stop_after=1)
                            keys = [notice.payload async for notice in notified]
                            # The poll, at least every poll_seconds even while notifications keep coming: one
                            # may have been missed, or a host died holding what waits.
                            if not keys or anyio.current_time() - polled >= self.poll_seconds:
                                polled = anyio.current_time()
                                keys = sorted({*keys, *await poll()})
                            yield keys
                    finally:
                        with anyio.CancelScope(shield=True), contextlib.suppress(psycopg.Error):
                            await listener.execute("UNLISTEN *")  # it goes back to the pool
            except psycopg.OperationalError as exc:
                logger.warning("the inbox's listening connection broke (%s); listening again", exc)
                await anyio.sleep(self.poll_seconds)

    async def _waiting(self, keys: Collection[str]) -> list[str]:
        if not keys:
            return []
        async with self.pool.connection() as conn:
            cursor = await conn.execute(_WAITING, (list(keys),))
            return sorted(str(row[0]) for row in await cursor.fetchall())
