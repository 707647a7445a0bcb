"""Heartbeat scheduler overhead with 10,000 beats, as ratios against baselines measured in the same run.

Run: ``.venv/bin/python bench/heartbeat_scheduler.py [--quick]``.

- next due: ``store.heartbeats.next_due()`` (what the scheduler asks before every nap) against a raw
  ``SELECT min(next_run)`` on a plain sqlite3 connection to the same file, against an empty round trip to a
  worker thread (the floor of every store call), and 10,000 against 100 beats.
- file change: ``sync_from_file`` of a 10,000-entry ``heartbeats.json`` in which two entries changed (one text,
  one schedule) against ``json.loads`` of the same text.

Beats draw from a seeded mix of 60 cron expressions in three zones. Figures are medians of several rounds.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from ishiki_host.core.clock import FakeClock
from ishiki_host.heartbeat import sync_from_file
from ishiki_host.memory import MemoryStore

BEATS, SMALL = 10_000, 100
ZONES = ("UTC", "Europe/Berlin", "America/New_York")


def _crons(rng: random.Random) -> list[str]:
    shapes = [
        lambda: f"{rng.randrange(60)} {rng.randrange(24)} * * *",
        lambda: f"{rng.randrange(60)} {rng.randrange(6, 20)} * * 1-5",
        lambda: f"*/{rng.choice([5, 10, 15, 30])} * * * *",
        lambda: f"0 {rng.randrange(24)} {rng.randrange(1, 29)} * *",
        lambda: f"{rng.randrange(60)} 9 13 * 5",
    ]
    return [rng.choice(shapes)() for _ in range(60)]


def _entries(count: int, rng: random.Random) -> list[dict[str, Any]]:
    crons = _crons(rng)
    return [
        {"id": f"beat-{i:05d}", "text": f"check item {i}", "cron": rng.choice(crons), "type": "task",
         "timezone": rng.choice(ZONES)}
        for i in range(count)
    ]  # fmt: skip


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


async def _next_due_times(path: Path, entries: list[dict[str, Any]], clock: FakeClock, rounds: int) -> float:
    """Seed ``entries`` into a fresh store at ``path``; median seconds of ``next_due()``."""
    await anyio.Path(path).write_text(json.dumps(entries))
    async with await MemoryStore.open(path.parent / "memory.db", clock=clock) as store:
        await sync_from_file(path, store, "UTC", clock)
        samples = []
        for _ in range(rounds * 50):
            began = time.perf_counter()
            await store.heartbeats.next_due()
            samples.append(time.perf_counter() - began)
    return _median(samples)


async def _thread_hop_time(rounds: int) -> float:
    """The floor of any store call: one empty round trip to a worker thread."""
    samples = []
    for _ in range(rounds * 50):
        began = time.perf_counter()
        await anyio.to_thread.run_sync(lambda: None)
        samples.append(time.perf_counter() - began)
    return _median(samples)


def _raw_min_time(db: Path, rounds: int) -> float:
    conn = sqlite3.connect(db)
    samples = []
    for _ in range(rounds * 50):
        began = time.perf_counter()
        conn.execute("SELECT min(next_run) FROM heartbeat WHERE next_run IS NOT NULL").fetchone()
        samples.append(time.perf_counter() - began)
    conn.close()
    return _median(samples)


async def _sync_times(path: Path, entries: list[dict[str, Any]], clock: FakeClock, rounds: int) -> tuple[float, float]:
    """Median seconds of a two-entry change applied by ``sync_from_file``, and of ``json.loads`` of the file."""
    sync_samples, load_samples = [], []
    async with await MemoryStore.open(path.parent / "memory.db", clock=clock) as store:
        await anyio.Path(path).write_text(json.dumps(entries))
        await sync_from_file(path, store, "UTC", clock)
        for round_no in range(rounds):
            entries[1]["text"] = f"changed text {round_no}"
            entries[2]["cron"] = f"{round_no % 60} 7 * * *"
            text = json.dumps(entries)
            await anyio.Path(path).write_text(text)
            began = time.perf_counter()
            report = await sync_from_file(path, store, "UTC", clock)
            sync_samples.append(time.perf_counter() - began)
            assert report.synced is not None
            assert sorted(report.synced.updated) == ["beat-00001", "beat-00002"], report.synced
            began = time.perf_counter()
            json.loads(text)
            load_samples.append(time.perf_counter() - began)
    return _median(sync_samples), _median(load_samples)


async def main(quick: bool) -> None:
    rounds = 3 if quick else 7
    rng = random.Random(20240601)
    clock = FakeClock(1_717_200_000.0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "large").mkdir()
        (root / "small").mkdir()
        (root / "sync").mkdir()
        large = await _next_due_times(root / "large" / "heartbeats.json", _entries(BEATS, rng), clock, rounds)
        small = await _next_due_times(root / "small" / "heartbeats.json", _entries(SMALL, rng), clock, rounds)
        raw = _raw_min_time(root / "large" / "memory.db", rounds)
        hop = await _thread_hop_time(rounds)
        sync, load = await _sync_times(root / "sync" / "heartbeats.json", _entries(BEATS, rng), clock, rounds)
    print(f"heartbeat scheduler, {BEATS} beats ({'quick' if quick else 'full'}, medians of {rounds} rounds)")
    print(f"  next due:    {large * 1e6:8.1f} us   raw SELECT min: {raw * 1e6:7.1f} us   ratio {large / raw:6.1f}")
    print(f"  next due:    {BEATS} vs {SMALL} beats ratio {large / small:6.2f}")
    print(f"  next due:    against an empty worker-thread hop ({hop * 1e6:.1f} us) ratio {large / hop:6.1f}")
    print(f"  file change: {sync * 1e3:8.1f} ms   json.loads:     {load * 1e3:7.1f} ms   ratio {sync / load:6.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    anyio.run(main, parser.parse_args().quick)
