"""Fact-log benchmark: append rate per fsync policy, and tail reads on a small vs a huge log.

    .venv/bin/python bench/factlog.py [--quick] [--runs N] [--json PATH] [--dir DIR]

Reports the figures the issue asks for:
- appends/s with fsync ``turn`` against fsync ``never`` (inside a turn: a sync per 4-entry step batch; outside
  a turn: every append fsynced, as inbound messages are); each run appends to a new log;
- time to read the last 100 entries of a 1,000,000-entry log against a 1,000-entry one (target ratio <= 2),
  both straight from disk (cache off) and through ``open`` + ``tail`` (10 times as many runs: they are short).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from _report import Bench, run, time_calls_async

from ishiki_host.core.factlog import FactLog, FsyncPolicy

MESSAGE = {
    "role": "user",
    "parts": [{"type": "text", "text": "a chat message of ordinary length, about one line of text or so " * 2}],
    "source": {"platform": "console", "selfId": "local", "channelId": "private:local", "messageId": "1"},
}


async def append_rate(directory: Path, policy: FsyncPolicy, count: int, *, in_turn: bool, runs: int) -> list[float]:
    """Appends per second in each of ``runs`` runs."""
    counter = iter(range(10_000))

    async def once() -> None:
        path = directory / f"append-{policy}-{in_turn}-{next(counter)}.jsonl"
        async with await FactLog.open(path, fsync=policy) as log:
            for index in range(count):
                await log.append("message", MESSAGE, turn=1 if in_turn else None)
                if in_turn and index % 4 == 3:
                    await log.sync()

    return [count / seconds for seconds in await time_calls_async(once, runs)]


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


async def tail_times(path: Path, runs: int) -> tuple[list[float], list[float]]:
    """Seconds per run of tail(100) from disk with the cache off, and of open + tail(100) with the default cache."""
    async with await FactLog.open(path, cache_size=0) as log:

        async def tail_only() -> None:
            assert len(log.tail(100)) == 100

        disk = await time_calls_async(tail_only, runs)

    async def open_and_tail() -> None:
        async with await FactLog.open(path) as log:
            assert len(log.tail(100)) == 100

    return disk, await time_calls_async(open_and_tail, runs)


async def measure(bench: Bench) -> None:
    """Write the logs in ``--dir`` (or a temporary directory) and report."""
    if bench.args.dir is None:
        with tempfile.TemporaryDirectory(prefix="ishiki-bench-") as tmp:
            await measure_in(bench, Path(tmp))
    else:
        bench.args.dir.mkdir(parents=True, exist_ok=True)
        await measure_in(bench, bench.args.dir)


async def measure_in(bench: Bench, directory: Path) -> None:
    """Append rates per policy, then tail reads on a small and a big log."""
    runs = bench.runs(quick=3, full=5)
    count = 2_000 if bench.quick else 20_000
    synced = 200 if bench.quick else 2_000
    never = await append_rate(directory, "never", count, in_turn=False, runs=runs)
    turn_inside = await append_rate(directory, "turn", count, in_turn=True, runs=runs)
    turn_outside = await append_rate(directory, "turn", synced, in_turn=False, runs=runs)
    rate = {"direction": "higher", "baseline": "fsync never", "baseline_samples": never}
    bench.add("appends, fsync never", "appends/s", never, direction="higher", notes=f"{count:,} appends a run")
    bench.add("appends, fsync turn, inside a turn", "appends/s", turn_inside, **rate,
              notes="a sync per 4-entry step batch")  # fmt: skip
    bench.add("appends, fsync turn, outside a turn", "appends/s", turn_outside, **rate,
              notes=f"every append synced, as inbound messages are; {synced:,} appends a run")  # fmt: skip

    big_count = 100_000 if bench.quick else 1_000_000
    small, big = directory / "small.jsonl", directory / "big.jsonl"
    write_log(small, 1_000)
    write_log(big, big_count)
    small_disk, small_open = await tail_times(small, runs * 10)
    big_disk, big_open = await tail_times(big, runs * 10)
    baseline = "1,000-entry log"
    bench.add(f"tail(100) from disk, {big_count:,}-entry log", "s", big_disk, baseline=baseline,
              baseline_samples=small_disk, target="<= 2")  # fmt: skip
    bench.add(f"open + tail(100), {big_count:,}-entry log", "s", big_open, baseline=baseline,
              baseline_samples=small_open)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own option."""
    parser.add_argument("--dir", type=Path, help="where to write the logs (default: a temporary directory)")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring); ``--quick`` uses fewer entries and runs."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
