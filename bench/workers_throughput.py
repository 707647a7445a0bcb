"""``ishiki run --workers 2`` against ``--workers 1``: turns per second of a real host on Telegram.

A real ``ishiki run`` (its own process; with ``--workers N`` a supervisor and N worker processes) polls the
package's loopback fake Bot API (in this process) and answers every direct message with one call to the fake
model server (its own process; 50 ms a call, ``max_concurrency`` 64, so the ideal is 64 / 0.05 s = 1,280 turns
per second). Each run warms up with one message in each of the chats (every message spawns its runtime), then
measures a second wave, one message in each chat again, from the moment the messages are queued until every
chat got its answer. The two worker counts run back to back in each run (paired), in fresh config dirs.

Figures: the rate with 2 workers against the rate with 1 (target >= 1.8 on a machine with two cores or more),
and each rate against the ideal. The machine runs everything here: the fake Bot API, the fake model, the
supervisor and the workers, so on two cores the workers share them with the fakes.

    .venv/bin/python bench/workers_throughput.py [--quick] [--chats N] [--runs N] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from _fake_server import fake_model_process
from _report import Bench, run
from _workers import TOKEN, running_host, write_config
from ishiki_channel_telegram.testing import FakeBotAPI, private_chat, user

LATENCY = 0.05
CONCURRENCY = 64


async def one_rate(base: Path, model_url: str, workers: int, chats: int) -> float:
    """Turns per second of the measured wave with ``workers`` worker processes."""
    async with FakeBotAPI(token=TOKEN) as bot:
        root = write_config(base / f"w{workers}", bot, model_url, CONCURRENCY)
        async with running_host(root, workers):

            async def wave() -> float:
                sent = len(bot.sent)
                start = time.perf_counter()
                for chat in range(chats):
                    bot.push_message(private_chat(user(10_000 + chat, f"P{chat}")), f"hello {chat}")
                await bot.until(lambda: len(bot.sent) >= sent + chats, deadline=600)
                return time.perf_counter() - start

            await wave()  # every chat spawns its runtime
            return chats / await wave()


async def measure(bench: Bench) -> None:
    """Paired runs: one worker, then two, in fresh config dirs, against one fake model process."""
    runs = bench.runs(quick=1, full=3)
    chats = bench.args.chats
    bench.note(
        f"{runs} runs of {chats} chats; model latency {LATENCY * 1e3:.0f} ms, concurrency {CONCURRENCY}; "
        f"{os.cpu_count()} cores"
    )
    one, two = [], []
    with fake_model_process(LATENCY, text="ok") as model_url:
        for index in range(runs):
            with tempfile.TemporaryDirectory() as base:
                one.append(await one_rate(Path(base), model_url, 1, chats))
                two.append(await one_rate(Path(base), model_url, 2, chats))
            bench.note(f"run {index + 1}: {one[-1]:.0f} turns/s with 1 worker, {two[-1]:.0f} with 2")
    ideal = [CONCURRENCY / LATENCY] * runs
    name = f"ideal {CONCURRENCY} / {LATENCY} s"
    bench.add("turns, 2 workers", "turns/s", two, baseline="turns, 1 worker", baseline_samples=one, paired=True,
              direction="higher", target=">= 1.8")  # fmt: skip
    bench.add("turns, 2 workers", "turns/s", two, baseline=name, baseline_samples=ideal, paired=True,
              direction="higher")  # fmt: skip
    bench.add("turns, 1 worker", "turns/s", one, baseline=name, baseline_samples=ideal, paired=True,
              direction="higher")  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--chats", type=int, default=1000)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
