"""The scheduler on a fake clock: DST, one-time beats, catch-up, overlap, failures, timeouts, restarts."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.heartbeat import next_run_for, sync_from_file
from ishiki_host.store import Beat, BeatSpec, BeatTarget, MemoryStore

pytestmark = pytest.mark.anyio

Wall = Callable[[str, str], float]
TARGET = BeatTarget("alice", "telegram:1", "private:9")
HANG = 20.0


async def _set_clock(clock: FakeClock, when: float) -> None:
    await clock.advance(when - clock.now())


async def _add(store: MemoryStore, spec: BeatSpec, tz: str = "UTC", next_run: float | None = None) -> Beat:
    if next_run is None:
        next_run = next_run_for(spec, default_tz=tz, after=store.clock.now())
    return await store.heartbeats.add(spec, next_run=next_run, created_by="alice/telegram:1/private:9")


async def _outcomes(store: MemoryStore, beat_id: str) -> list[tuple[str, str | None]]:
    return [(r.outcome, r.output) for r in reversed(await store.heartbeats.runs(beat_id, limit=100))]


@pytest.mark.parametrize(
    ("tz", "cron", "start", "end", "expected"),
    [
        ("Europe/Berlin", "30 2 * * *", "2024-03-29 12:00", "2024-04-02 12:00",
         ["03-30 02:30 CET", "03-31 03:00 CEST", "04-01 02:30 CEST", "04-02 02:30 CEST"]),
        ("Europe/Berlin", "30 2 * * *", "2024-10-25 12:00", "2024-10-29 12:00",
         ["10-26 02:30 CEST", "10-27 02:30 CEST", "10-28 02:30 CET", "10-29 02:30 CET"]),
        ("America/New_York", "30 1 * * *", "2024-11-01 12:00", "2024-11-05 12:00",
         ["11-02 01:30 EDT", "11-03 01:30 EDT", "11-04 01:30 EST", "11-05 01:30 EST"]),
        ("America/New_York", "30 2 * * *", "2024-03-08 12:00", "2024-03-12 12:00",
         ["03-09 02:30 EST", "03-10 03:00 EDT", "03-11 02:30 EDT", "03-12 02:30 EDT"]),
    ],
)  # fmt: skip
async def test_a_daily_beat_fires_once_a_day_across_dst(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall,
    tz: str, cron: str, start: str, end: str, expected: list[str],
) -> None:  # fmt: skip
    await _set_clock(fake_clock, wall(start, tz))
    await _add(store, BeatSpec("daily", "water the plants", "reminder", cron, timezone=tz, target=TARGET))
    async with drive(default_tz="UTC") as driver:
        await driver.run_until(wall(end, tz))
    assert [d.strftime("%m-%d %H:%M %Z") for d in runner.times("daily", tz)] == expected
    assert await _outcomes(store, "daily") == [("ok", "ran daily")] * 4


async def test_a_one_time_beat_fires_once_and_is_deleted(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 08:00", "Europe/Berlin"))
    spec = BeatSpec("once", "call mum", "reminder", "0 9 1 6 *", timezone="Europe/Berlin", recurring=False)
    await _add(store, spec)
    async with drive() as driver:
        await driver.run_until(wall("2024-06-03 12:00", "Europe/Berlin"))
    assert [c.beat_id for c in runner.calls] == ["once"]
    assert runner.calls[0].at == wall("2024-06-01 09:00", "Europe/Berlin")
    assert await store.heartbeats.get("once") is None
    assert await _outcomes(store, "once") == [("ok", "ran once")]


async def test_a_managed_one_time_beat_is_kept_spent_and_not_re_added(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall, tmp_path: Path
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 08:00", "UTC"))
    beats_file = tmp_path / "heartbeats.json"
    entry = {"id": "launch", "text": "announce", "cron": "0 9 1 6 *", "type": "task", "recurring": False}
    beats_file.write_text(json.dumps([entry]))
    await sync_from_file(beats_file, store, "UTC", fake_clock)
    async with drive() as driver:
        await driver.run_until(wall("2024-06-01 10:00", "UTC"))
        report = await sync_from_file(beats_file, store, "UTC", fake_clock)
        assert report.synced is not None
        assert not report.changed
        driver.scheduler.poke()
        await driver.run_until(wall("2024-06-03 10:00", "UTC"))
    spent = await store.heartbeats.get("launch")
    assert spent is not None
    assert (spent.managed, spent.next_run, spent.last_run) == (True, None, wall("2024-06-01 09:00", "UTC"))
    assert [c.beat_id for c in runner.calls] == ["launch"]


@pytest.mark.parametrize(("late", "runs"), [(120.0, True), (299.0, True), (300.0, False), (3600.0, False)])
async def test_a_beat_missed_while_down_runs_at_start_only_within_catch_up(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall, late: float, runs: bool
) -> None:
    slot = wall("2024-06-01 09:00", "UTC")
    await _set_clock(fake_clock, slot + late)
    await _add(store, BeatSpec("daily", "stretch", "task", "0 9 * * *"), next_run=slot)
    async with drive(catch_up_seconds=300):
        pass
    assert len(runner.calls) == (1 if runs else 0)
    beat = await store.heartbeats.get("daily")
    assert beat is not None
    assert beat.next_run == slot + 86400
    outcomes = await _outcomes(store, "daily")
    if runs:
        assert outcomes == [("ok", "ran daily")]
        assert f"{round(late / 60)} minute" in runner.calls[0].prompt
    else:
        assert outcomes[0][0] == "skipped"
        assert f"missed: due Sat 2024-06-01 09:00 UTC, {late:.0f} s ago (catch-up limit 300 s)" == outcomes[0][1]


async def test_several_missed_slots_run_once_for_the_latest(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 14:02", "UTC"))
    await _add(store, BeatSpec("hourly", "check mail", "task", "0 * * * *"), next_run=wall("2024-06-01 09:00", "UTC"))
    async with drive():
        pass
    assert len(runner.calls) == 1
    assert "due Sat 2024-06-01 14:00 UTC" in runner.calls[0].prompt
    beat = await store.heartbeats.get("hourly")
    assert beat is not None
    assert beat.next_run == wall("2024-06-01 15:00", "UTC")


async def test_a_one_time_beat_missed_too_long_is_skipped_and_dropped(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 12:00", "UTC"))
    spec = BeatSpec("once", "call mum", "reminder", "0 9 1 6 *", recurring=False)
    await _add(store, spec, next_run=wall("2024-06-01 09:00", "UTC"))
    async with drive():
        pass
    assert runner.calls == []
    assert await store.heartbeats.get("once") is None
    assert [o for o, _ in await _outcomes(store, "once")] == ["skipped"]


async def test_an_overlapping_slot_is_skipped(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 08:59", "UTC"))
    await _add(store, BeatSpec("hourly", "long report", "task", "0 * * * *"))
    runner.gate = anyio.Event()
    async with drive(run_timeout=7200) as driver:
        await fake_clock.advance(60)
        with anyio.fail_after(HANG):
            await runner.started.wait()
            await fake_clock.wait_for_sleepers(2)  # the timer and the run's deadline
        assert driver.scheduler.running == frozenset({"hourly"})
        await fake_clock.advance(3600)
        with anyio.fail_after(HANG):
            await fake_clock.wait_for_sleepers(2)
        assert [o for o, _ in await _outcomes(store, "hourly")] == ["running", "skipped"]
        runner.gate.set()
        await driver.settle()
    outcomes = await _outcomes(store, "hourly")
    assert outcomes == [
        ("ok", "ran hourly"),
        ("skipped", "due Sat 2024-06-01 10:00 UTC: the previous run is still going"),
    ]
    assert len(runner.calls) == 1
    beat = await store.heartbeats.get("hourly")
    assert beat is not None
    assert beat.next_run == wall("2024-06-01 11:00", "UTC")


async def test_a_failed_run_is_recorded_and_retried_only_at_the_next_slot(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 08:00", "UTC"))
    await _add(store, BeatSpec("daily", "summarize the news", "task", "0 9 * * *"))
    runner.failing.add("daily")
    async with drive() as driver:
        await driver.run_until(wall("2024-06-02 08:59", "UTC"))
        assert await _outcomes(store, "daily") == [("failed", "ModelUnavailable: the model is down")]
        assert len(runner.calls) == 1
        runner.failing.clear()
        await driver.run_until(wall("2024-06-02 09:30", "UTC"))
    assert [o for o, _ in await _outcomes(store, "daily")] == ["failed", "ok"]
    assert [c.at for c in runner.calls] == [wall("2024-06-01 09:00", "UTC"), wall("2024-06-02 09:00", "UTC")]


async def test_a_run_past_its_timeout_fails(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 08:59", "UTC"))
    await _add(store, BeatSpec("daily", "slow", "task", "0 9 * * *"))
    runner.gate = anyio.Event()
    async with drive(run_timeout=120) as driver:
        await fake_clock.advance(60)
        with anyio.fail_after(HANG):
            await runner.started.wait()
            await fake_clock.wait_for_sleepers(2)
        await fake_clock.advance(120)
        await driver.settle()
    assert await _outcomes(store, "daily") == [("failed", "timed out after 120 s")]


async def test_a_stop_during_a_run_records_it_failed(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 08:59", "UTC"))
    await _add(store, BeatSpec("daily", "slow", "task", "0 9 * * *"))
    runner.gate = anyio.Event()
    async with drive():
        await fake_clock.advance(60)
        with anyio.fail_after(HANG):
            await runner.started.wait()
    assert await _outcomes(store, "daily") == [("failed", "the host stopped during the run")]


async def test_start_up_fails_cut_off_runs_and_drops_spent_one_time_beats(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 08:00", "UTC"))
    await store.heartbeats.start_run("crashed")
    spent = await _add(store, BeatSpec("spent", "x", "task", "0 9 1 6 *", recurring=False))
    await store.heartbeats.reschedule(spent.id, next_run=None, last_run=fake_clock.now() - 60)
    async with drive():
        pass
    assert await _outcomes(store, "crashed") == [("failed", "the host stopped before the run finished")]
    assert await store.heartbeats.get("spent") is None


async def test_poke_re_arms_the_timer(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 08:00", "UTC"))
    async with drive(max_nap=3600) as driver:
        assert fake_clock.next_deadline() == wall("2024-06-01 09:00", "UTC")
        await _add(store, BeatSpec("soon", "x", "task", "10 8 * * *"))
        driver.scheduler.poke()
        await driver.settle()
        assert fake_clock.next_deadline() == wall("2024-06-01 08:10", "UTC")
        await driver.hop()
    assert [c.beat_id for c in runner.calls] == ["soon"]


async def test_a_beat_that_cannot_be_scheduled_is_paused(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 08:00", "UTC"))
    bad = BeatSpec("bad", "x", "task", "0 9 * * *", timezone="Gone/Zone")
    await _add(store, bad, next_run=fake_clock.now() - 10)
    async with drive():
        pass
    beat = await store.heartbeats.get("bad")
    assert beat is not None
    assert beat.next_run is None
    outcomes = await _outcomes(store, "bad")
    assert outcomes[0][0] == "failed"
    assert "unknown time zone 'Gone/Zone'" in (outcomes[0][1] or "")
    assert runner.calls == []


async def test_the_prompt_reaches_the_runner(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall
) -> None:
    await _set_clock(fake_clock, wall("2024-06-01 08:00", "Asia/Tokyo"))
    await _add(store, BeatSpec("r", "take your pills, the doctor said so", "reminder", "0 9 * * *",
                               timezone="Asia/Tokyo", target=TARGET))  # fmt: skip
    async with drive() as driver:
        await driver.hop()
    prompt = runner.calls[0].prompt
    assert "> take your pills, the doctor said so" in prompt
    assert "due Sat 2024-06-01 09:00 JST" in prompt
    assert "Remind them now, in this chat" in prompt
    assert datetime.fromtimestamp(runner.calls[0].at, ZoneInfo("Asia/Tokyo")).hour == 9
