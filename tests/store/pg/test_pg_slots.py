"""Heartbeat slots across a fleet: two hosts schedule the same beat from the same ``heartbeats.json``, each in its
own memory database, and each slot runs on one of them only (``BeatSlots`` on a real PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.core.clock import FakeClock
from ishiki_host.heartbeat import HeartbeatScheduler, next_run_for
from ishiki_host.store import Beat, BeatSpec, MemoryStore
from ishiki_host.store.pg.slots import BeatSlots

pytestmark = pytest.mark.anyio

HANG = 20.0
START = 1_717_200_000.0  # 2024-06-01 00:00 UTC


class Runs:
    """A ``BeatRunner`` recording which host ran which slot."""

    def __init__(self, host: str, clock: FakeClock, ran: list[tuple[str, float]]):
        self.host, self.clock, self.ran = host, clock, ran

    async def run(self, beat: Beat, prompt: str) -> str:
        self.ran.append((self.host, self.clock.now()))
        return "ok"


class Claims:
    """``SlotClaims`` of one host on ``BeatSlots`` (what ``Fleet.claim_slot`` does)."""

    def __init__(self, slots: BeatSlots):
        self.slots = slots

    async def claim_slot(self, beat_id: str, due_at: float) -> bool:
        return await self.slots.claim(beat_id, due_at)


async def test_each_slot_of_a_beat_both_hosts_schedule_runs_on_one_host(
    tmp_path: Path, pg_pool: AsyncConnectionPool[Any]
) -> None:
    clock = FakeClock(START)
    await BeatSlots(pg_pool, "a/1").setup()
    spec = BeatSpec("hourly", "stretch", "task", "0 * * * *")
    ran: list[tuple[str, float]] = []
    async with (
        await MemoryStore.open(tmp_path / "a" / "memory.db", clock=clock) as store_a,
        await MemoryStore.open(tmp_path / "b" / "memory.db", clock=clock) as store_b,
        anyio.create_task_group() as tg,
    ):
        schedulers = []
        for host, store in (("a/1", store_a), ("b/1", store_b)):
            await store.heartbeats.add(spec, next_run=next_run_for(spec, default_tz="UTC", after=START))
            scheduler = HeartbeatScheduler(
                store, Runs(host, clock, ran), clock=clock, slots=Claims(BeatSlots(pg_pool, host))
            )
            await tg.start(scheduler.serve)
            schedulers.append(scheduler)
        for _ in range(3):  # three hourly slots
            with anyio.fail_after(HANG):
                for scheduler in schedulers:
                    await scheduler.settled()
            await clock.advance(3600)
        with anyio.fail_after(HANG):
            for scheduler in schedulers:
                await scheduler.settled()
        tg.cancel_scope.cancel()
    slots = [when for _, when in ran]
    assert slots == [START + 3600, START + 7200, START + 10800]  # each slot once, between the two hosts
    assert await BeatSlots(pg_pool, "c/1").claim("hourly", START + 3600) is False  # claimed already


async def test_a_claim_that_cannot_be_made_runs_nothing(tmp_path: Path, pg_pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock(START)
    spec = BeatSpec("hourly", "stretch", "task", "0 * * * *")
    ran: list[tuple[str, float]] = []
    async with await MemoryStore.open(tmp_path / "memory.db", clock=clock) as store, anyio.create_task_group() as tg:
        await store.heartbeats.add(spec, next_run=next_run_for(spec, default_tz="UTC", after=START))
        scheduler = HeartbeatScheduler(
            store, Runs("a/1", clock, ran), clock=clock, slots=Claims(BeatSlots(pg_pool, "a"))
        )
        await tg.start(scheduler.serve)  # the slots' table was never made: every claim fails
        await clock.advance(3600)
        with anyio.fail_after(HANG):
            await scheduler.settled()
        following = await store.heartbeats.get("hourly")
        tg.cancel_scope.cancel()
    assert ran == []  # once at most: not run rather than maybe twice
    assert following is not None
    assert following.next_run == START + 7200  # and it moved on to its next slot
