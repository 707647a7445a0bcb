"""Heartbeat slots claimed across a fleet: each due time of a beat runs on one host of the fleet only.

    slots = BeatSlots(pool, holder="web-1/3f2a9c1d")
    if await slots.claim("morning", due_at=1796371200.0):     # False: another host runs this slot
        ...run the beat...

Every host of a fleet syncs the same ``heartbeats.json`` into its own memory database and schedules the same
beats from it, so each would run every slot; before a host runs one, it claims ``(beat id, due time)`` here,
one ``INSERT ... ON CONFLICT DO NOTHING``, and only the host whose row went in runs it. The due time is the
slot the beat's cron gives, the same on every host. A reminder made in a conversation lives in the memory
database of the host that served it and is claimed the same way (it has no rival). Rows older than a week are
pruned by ``prune``: a slot is claimed when due, never a week later (catch-up is bounded far below that).

``ishiki_host.store.pg.beats`` is the fuller design, in which the beats themselves live in PostgreSQL; it waits
for the memory database to move there (docs/scale-out.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ishiki_host.store.pg.schema import migrate

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["BeatSlots"]

_CLAIM = """
INSERT INTO ishiki_beat_slots (beat_id, due_at, holder) VALUES (%s, %s, %s)
ON CONFLICT (beat_id, due_at) DO NOTHING
"""


class BeatSlots:
    """The slots this host (``holder``) claims in the fleet's database (see the module docstring)."""

    def __init__(self, pool: AsyncConnectionPool[Any], holder: str):
        self.pool = pool
        self.holder = holder

    async def setup(self) -> None:
        """Bring the database to the fleet's schema (the slots' table among the rest)."""
        await migrate(self.pool)

    async def claim(self, beat_id: str, due_at: float) -> bool:
        """Whether this host runs the slot of ``beat_id`` due at ``due_at`` (Unix seconds): ``True`` for the
        first host to ask, ``False`` for every other."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(_CLAIM, (beat_id, due_at, self.holder))
            return bool(cursor.rowcount == 1)

    async def prune(self, *, keep_seconds: float = 7 * 86400.0) -> int:
        """Forget the claims older than ``keep_seconds``; how many went."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "DELETE FROM ishiki_beat_slots WHERE claimed_at < clock_timestamp() - %s * interval '1 second'",
                (keep_seconds,),
            )
            return int(cursor.rowcount)
