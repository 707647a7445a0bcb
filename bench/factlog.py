"""Fact-log benchmark: append rate per fsync policy, and tail reads on a small vs a huge log.

    .venv/bin/python bench/factlog.py [--quick] [--dir DIR]

Prints medians of several runs and the ratios the issue asks for:
- appends/s with fsync ``never`` vs ``turn`` (inside a turn: a sync per 4-entry step batch; outside a turn:
  every append fsynced, as inbound messages are);
- time to read the last 100 entries of a 1,000-entry vs a 1,000,000-entry log (target ratio <= 2), both
  straight from disk (cache off) and through ``open`` + ``tail``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from ishiki_host.core.factlog import FactLog, FsyncPolicy

MESSAGE = {
    "role": "user",
    "parts": [{"type": "text", "text": "a chat message of ordinary length, about one line of text or so " * 2}],
    "source": {"platform": "console", "selfId": "local", "channelId": "private:local", "messageId": "1"},
}


async def median_seconds(runs: int, once: Callable[[], Awaitable[None]]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await once()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def append_rate(directory: Path, policy: FsyncPolicy, count: int, *, in_turn: bool, runs: int) -> float:
    """Appends per second (median of ``runs``)."""
    counter = iter(range(10_000))

    async def once() -> None:
        path = directory / f"append-{policy}-{in_turn}-{next(counter)}.jsonl"
        async with await FactLog.open(path, fsync=policy) as log:
            for index in range(count):
                await log.append("message", MESSAGE, turn=1 if in_turn else None)
                if in_turn and index % 4 == 3:
                    await log.sync()

    return count / await median_seconds(runs, once)


def write_log(path: Path, entries: int) -> None:
    """A log of ``entries`` message entries, written directly (building a huge one via appends is slow)."""
    data = json.dumps(MESSAGE, separators=(",", ":"))
    with path.open("w", encoding="utf-8") as out:
        batch = []
        for index in range(1, entries + 1):
            batch.append(f'{{"id":{index},"type":"message","ts":1700000000.0,"data":{data}}}\n')
            if len(batch) == 10_000:
                out.write("".join(batch))
                batch.clear()
        out.write("".join(batch))
        out.flush()
        os.fsync(out.fileno())  # so no writeback of the new file runs while we measure


async def tail_times(path: Path, runs: int) -> tuple[float, float]:
    """(tail(100) from disk with the cache off, open + tail(100) with the default cache), median seconds."""
    async with await FactLog.open(path, cache_size=0) as log:

        async def tail_only() -> None:
            assert len(log.tail(100)) == 100

        disk = await median_seconds(runs, tail_only)

    async def open_and_tail() -> None:
        async with await FactLog.open(path) as log:
            assert len(log.tail(100)) == 100

    return disk, await median_seconds(runs, open_and_tail)


async def main(quick: bool, directory: Path) -> None:
    runs = 3 if quick else 5
    count = 2_000 if quick else 20_000
    synced = 200 if quick else 2_000
    print(f"fact-log benchmark in {directory} ({'quick' if quick else 'full'}; medians of {runs} runs)")
    never = await append_rate(directory, "never", count, in_turn=False, runs=runs)
    turn_inside = await append_rate(directory, "turn", count, in_turn=True, runs=runs)
    turn_outside = await append_rate(directory, "turn", synced, in_turn=False, runs=runs)
    print(f"appends/s  fsync never: {never:,.0f}")
    print(f"appends/s  fsync turn, inside a turn (sync per 4-entry batch): {turn_inside:,.0f}")
    print(f"appends/s  fsync turn, outside a turn (every append synced): {turn_outside:,.0f}")
    print(f"ratio never / turn-inside: {never / turn_inside:.1f}x   never / turn-outside: {never / turn_outside:.1f}x")

    big_count = 100_000 if quick else 1_000_000
    small, big = directory / "small.jsonl", directory / "big.jsonl"
    write_log(small, 1_000)
    write_log(big, big_count)
    small_disk, small_open = await tail_times(small, runs * 10)
    big_disk, big_open = await tail_times(big, runs * 10)
    print(
        f"tail(100) from disk: 1,000 entries {small_disk * 1e6:,.0f} us; {big_count:,} entries {big_disk * 1e6:,.0f} us"
    )
    print(
        f"open + tail(100):    1,000 entries {small_open * 1e6:,.0f} us; {big_count:,} entries {big_open * 1e6:,.0f} us"
    )
    print(f"ratio big / small: tail {big_disk / small_disk:.2f} (target <= 2), open + tail {big_open / small_open:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer entries and runs")
    parser.add_argument("--dir", type=Path, help="where to write the logs (default: a temporary directory)")
    args = parser.parse_args()
    if args.dir:
        args.dir.mkdir(parents=True, exist_ok=True)
        anyio.run(main, args.quick, args.dir)
    else:
        with tempfile.TemporaryDirectory(prefix="ishiki-bench-") as tmp:
            anyio.run(main, args.quick, Path(tmp))
