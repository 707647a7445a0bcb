"""Heartbeat scheduler overhead with 10,000 beats, as ratios against baselines measured in the same run.

Run: ``.venv/bin/python bench/heartbeat_scheduler.py [--quick] [--runs N] [--json PATH]``.

- next due: ``store.heartbeats.next_due()`` (what the scheduler asks before every nap) against a raw
  ``SELECT min(next_run)`` on a plain sqlite3 connection to the same file, against an empty round trip to a
  worker thread (the floor of every store call), and 10,000 against 100 beats.
- file change: ``sync_from_file`` of a 10,000-entry ``heartbeats.json`` in which two entries changed (one text,
  one schedule) against ``json.loads`` of the same text.

Beats draw from a seeded mix of 60 cron expressions in three zones. A run of a per-call figure is the median
of 50 individually timed calls; a run of the file change is one change.
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from _report import Bench, run

from ishiki_host.core.clock import FakeClock
from ishiki_host.heartbeat import sync_from_file
from ishiki_host.store import MemoryStore

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


CALLS_PER_RUN = 50


async def _next_due_times(path: Path, entries: list[dict[str, Any]], clock: FakeClock, rounds: int) -> list[float]:
    """Seed ``entries`` into a fresh store at ``path``; per round, the median seconds of ``next_due()``."""
    await anyio.Path(path).write_text(json.dumps(entries))
    async with await MemoryStore.open(path.parent / "memory.db", clock=clock) as store:
        await sync_from_file(path, store, "UTC", clock)
        runs = []
        for _ in range(rounds):
            samples = []
            for _ in range(CALLS_PER_RUN):
                began = time.perf_counter()
                await store.heartbeats.next_due()
                samples.append(time.perf_counter() - began)
            runs.append(statistics.median(samples))
    return runs


async def _thread_hop_time(rounds: int) -> list[float]:
    """The floor of any store call: one empty round trip to a worker thread (per round, the median)."""
    runs = []
    for _ in range(rounds):
        samples = []
        for _ in range(CALLS_PER_RUN):
            began = time.perf_counter()
            await anyio.to_thread.run_sync(lambda: None)
            samples.append(time.perf_counter() - began)
        runs.append(statistics.median(samples))
    return runs


def _raw_min_time(db: Path, rounds: int) -> list[float]:
    """A raw ``SELECT min(next_run)`` on a plain sqlite3 connection (per round, the median)."""
    conn = sqlite3.connect(db)
    runs = []
    for _ in range(rounds):
        samples = []
        for _ in range(CALLS_PER_RUN):
            began = time.perf_counter()
            conn.execute("SELECT min(next_run) FROM heartbeat WHERE next_run IS NOT NULL").fetchone()
            samples.append(time.perf_counter() - began)
        runs.append(statistics.median(samples))
    conn.close()
    return runs


async def _sync_times(
    path: Path, entries: list[dict[str, Any]], clock: FakeClock, rounds: int
) -> tuple[list[float], list[float]]:
    """Seconds per round of a two-entry change applied by ``sync_from_file``, and of ``json.loads`` of the file."""
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
    return sync_samples, load_samples


async def measure(bench: Bench) -> None:
    """next_due against its three baselines, and a file change against json.loads."""
    rounds = bench.runs(quick=3, full=7)
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
    next_due = f"next_due(), {BEATS:,} beats"
    bench.add(next_due, "s", large, baseline="raw SELECT min(next_run)", baseline_samples=raw)
    bench.add(next_due, "s", large, baseline=f"next_due(), {SMALL} beats", baseline_samples=small)
    bench.add(next_due, "s", large, baseline="empty worker-thread hop", baseline_samples=hop)
    bench.add(f"file change: sync_from_file, 2 of {BEATS:,} beats changed", "s", sync,
              baseline="json.loads of the file", baseline_samples=load, paired=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
