"""The fleet's hosts: each registers when it starts, beats while it runs, and says so when it stops cleanly.

    hosts = HostBook(pool, holder="web-1/3f2a9c1d", name="web-1")
    await hosts.setup()
    await hosts.register()                                    # at start: started and seen now
    await task_group.start(hosts.run, clock, 5.0)             # seen again every 5 s; a failed beat is only logged
    ...
    await hosts.stopped()                                     # on a clean stop

A host is a row of ``ishiki_hosts``, keyed by its ``holder``: the name its leases are held under, unique to one
run of the host (``name`` is the operator's, shared by every run on that machine). ``seen_at`` tells the living
from the dead: ``ishiki status`` (``fleetview``) calls a host alive while it was seen recently and has not
stopped. Times are the database's (``clock_timestamp()``), never a host's, so a host with a skewed clock looks
neither dead nor immortal. A beat that fails (the database restarts, the network drops) is logged and the next
one tries again: the database may be away for a while, and the host's leases, not this row, decide what it
serves.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskStatus

from ishiki_host._version import __version__
from ishiki_host.core.clock import Clock
from ishiki_host.store.pg.schema import migrate

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["HostBook"]

logger = logging.getLogger(__name__)

# One clock_timestamp() per statement (``at``): two calls in one row would differ by microseconds.
_REGISTER = """
INSERT INTO ishiki_hosts (holder, name, pid, version, started_at, seen_at, stopped_at)
SELECT %(holder)s, %(name)s, %(pid)s, %(version)s, at, at, NULL FROM (SELECT clock_timestamp() AS at) AS now
ON CONFLICT (holder) DO UPDATE SET
    name = EXCLUDED.name, pid = EXCLUDED.pid, version = EXCLUDED.version,
    started_at = EXCLUDED.started_at, seen_at = EXCLUDED.seen_at, stopped_at = NULL
"""
# An upsert, not an UPDATE: a row someone deleted (an operator tidying the table) comes back at the next beat.
_BEAT = """
INSERT INTO ishiki_hosts (holder, name, pid, version, started_at, seen_at)
SELECT %(holder)s, %(name)s, %(pid)s, %(version)s, at, at FROM (SELECT clock_timestamp() AS at) AS now
ON CONFLICT (holder) DO UPDATE SET seen_at = EXCLUDED.seen_at, stopped_at = NULL
"""
_STOPPED = """
UPDATE ishiki_hosts SET seen_at = now.at, stopped_at = now.at FROM (SELECT clock_timestamp() AS at) AS now
WHERE holder = %s
"""
_FORGET = """
DELETE FROM ishiki_hosts WHERE seen_at < clock_timestamp() - %s * interval '1 second' AND holder <> %s
"""


class HostBook:
    """The row of one run of a host, ``holder``, named ``name`` by its operator, in the database of ``pool``
    (see the module docstring). ``pid`` and ``version`` default to this process's and this ishiki-host's;
    ``register`` forgets hosts not seen for ``forget_seconds`` (a week), so restarts do not pile up."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        holder: str,
        name: str,
        *,
        pid: int | None = None,
        version: str = __version__,
        forget_seconds: float = 7 * 86400.0,
    ):
        if not holder:
            raise ValueError("a host needs a holder name (the one its leases are held under)")
        self.pool = pool
        self.holder = holder
        self.name = name
        self.pid = os.getpid() if pid is None else pid
        self.version = version
        self.forget_seconds = forget_seconds

    async def setup(self) -> None:
        """Bring the database to the fleet's schema (``schema.migrate``: the hosts' table among the rest)."""
        await migrate(self.pool)

    async def register(self) -> None:
        """Record this host as started and seen now (a holder seen before starts afresh)."""
        async with self.pool.connection() as conn:
            await conn.execute(_REGISTER, self._params())
            await conn.execute(_FORGET, (self.forget_seconds, self.holder))

    async def beat(self) -> None:
        """Record this host as seen now (and running: a host that beats has not stopped)."""
        async with self.pool.connection() as conn:
            await conn.execute(_BEAT, self._params())

    async def stopped(self) -> None:
        """Record that this host stopped cleanly, now: it is no longer alive, without waiting for it to age."""
        async with self.pool.connection() as conn:
            await conn.execute(_STOPPED, (self.holder,))

    async def run(
        self, clock: Clock, every_seconds: float = 5.0, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Beat every ``every_seconds`` on ``clock`` until cancelled (``register`` comes first, at start). A
        beat that fails or takes longer than ``every_seconds`` of real time is logged, and the next one tries."""
        if every_seconds <= 0:
            raise ValueError(f"a host beats every positive number of seconds, not {every_seconds}")
        task_status.started()
        while True:
            await clock.sleep(every_seconds)
            await self._beat_once(every_seconds)

    async def _beat_once(self, limit_seconds: float) -> None:
        try:
            # Real time: a server that stopped answering must not hold the beats behind this one.
            with anyio.fail_after(limit_seconds):
                await self.beat()
        except TimeoutError:
            logger.warning("host %s: the fleet's database did not take a beat within %g s", self.holder, limit_seconds)
        except Exception as exc:  # the connection broke, the server restarts: the next beat tries again
            logger.warning("host %s: the fleet's database did not take a beat: %s", self.holder, exc)

    def _params(self) -> dict[str, Any]:
        return {"holder": self.holder, "name": self.name, "pid": self.pid, "version": self.version}
