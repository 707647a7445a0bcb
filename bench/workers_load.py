"""``host_load``'s wave across processes: 5,000 new chats at once on ``ishiki run --workers 1`` and ``--workers 2``.

A real ``ishiki run`` (its own process; with ``--workers 2`` a supervisor and two worker processes) polls the
Telegram package's loopback fake Bot API (in this process) and answers every direct message with one call to
the fake model server (its own process): 100 ms a call and ``max_concurrency`` 128, as in ``host_load.py``, so
the ideal is 1,280 turns per second and the ideal p99 the time the 99th percentile call would end if the 128
slots never idled. Each run, for each worker count in fresh config dirs (paired):

1. **cold start**: from launching ``ishiki run`` until the first chat's message is answered;
2. **the wave**: one message in each of ``--conversations`` new chats, queued at once; each chat's time from
   its message being queued to its answer (the p99 of those, against the ideal p99) and the wave's rate;
   and the CPU time per turn of the wave of the supervisor (with one worker: the one process), the workers and
   this process (the fake Bot API);
3. **RSS per idle runtime**: the resident memory of the supervisor and its workers with every runtime of the
   wave alive and idle, less what it was before the wave, per runtime;
4. with workers, **a worker's restart**: one worker is killed (SIGKILL) and one message queued in each of 32
   more new chats at once (about half are the dead worker's); from the kill until every one is answered,
   against the cold start of the same run. The restart waits the pool's first back-off (0.5 s, jittered).

The machine runs everything here: the fake Bot API, the fake model, the supervisor and the workers.

    .venv/bin/python bench/workers_load.py [--quick] [--conversations N] [--runs N] [--json PATH]
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _fake_server import fake_model_process
from _report import Bench, run
from _workers import TOKEN, ChatReplies, children, cpu_seconds, host_rss, push_hello, running_host, write_config
from ishiki_channel_telegram.testing import FakeBotAPI

LATENCY = 0.1
CONCURRENCY = 128
AFTER_KILL = 32  # chats written to right after a worker is killed
FIRST_CHAT = 10_000
CPU_PARTS = ("supervisor", "workers", "fake Bot API")


@dataclass(frozen=True)
class Result:
    """One worker count's readings in one run."""

    cold_start: float
    p99: float
    rate: float
    rss_per_runtime: float
    restart: float | None
    cpu: dict[
        str, float
    ]  # CPU seconds per turn of the wave: the supervisor (or the one process), the workers, the fake


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` percentile of ``values`` (the nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]


async def one_count(base: Path, model_url: str, workers: int, conversations: int) -> Result:
    """The four readings with ``workers`` worker processes (see the module docstring)."""
    async with FakeBotAPI(token=TOKEN) as bot:
        root = write_config(base / f"w{workers}", bot, model_url, CONCURRENCY)
        replies = ChatReplies(bot)
        launched = time.perf_counter()
        async with running_host(root, workers) as process:
            push_hello(bot, FIRST_CHAT)
            await replies.until_answered([FIRST_CHAT], deadline=300)
            cold_start = replies.first[FIRST_CHAT] - launched
            rss_before = host_rss(process.pid)

            chats = range(FIRST_CHAT + 1, FIRST_CHAT + 1 + conversations)
            workers_pids = children(process.pid)
            before = cpu_seconds(process.pid), sum(map(cpu_seconds, workers_pids)), time.process_time()
            queued = {chat: push_hello(bot, chat) for chat in chats}
            await replies.until_answered(chats)
            after = cpu_seconds(process.pid), sum(map(cpu_seconds, workers_pids)), time.process_time()
            cpu = {part: (b - a) / conversations for part, a, b in zip(CPU_PARTS, before, after, strict=True)}
            waits = [replies.first[chat] - queued[chat] for chat in chats]
            rate = conversations / (max(replies.first[chat] for chat in chats) - min(queued.values()))
            rss_per_runtime = (host_rss(process.pid) - rss_before) / conversations

            restart = None
            if workers > 1:
                victim = children(process.pid)[0]
                killed = time.perf_counter()
                os.kill(victim, signal.SIGKILL)
                after = range(chats.stop, chats.stop + AFTER_KILL)
                for chat in after:
                    push_hello(bot, chat)
                await replies.until_answered(after, deadline=300)
                restart = max(replies.first[chat] for chat in after) - killed
    return Result(cold_start, percentile(waits, 0.99), rate, rss_per_runtime, restart, cpu)


async def measure(bench: Bench) -> None:
    """Paired runs: one worker, then two, in fresh config dirs, against one fake model process."""
    runs = bench.runs(quick=1, full=3)
    conversations = 1000 if bench.quick and bench.args.conversations == 5000 else bench.args.conversations
    ideal_p99 = math.ceil(0.99 * conversations / CONCURRENCY) * LATENCY
    bench.note(
        f"{runs} run(s) of {conversations:,} new chats at once; model latency {LATENCY * 1e3:.0f} ms, "
        f"max_concurrency {CONCURRENCY}; {os.cpu_count()} cores"
    )
    one: list[Result] = []
    two: list[Result] = []
    with fake_model_process(LATENCY, text="ok") as model_url:
        for index in range(runs):
            with tempfile.TemporaryDirectory() as base:
                one.append(await one_count(Path(base), model_url, 1, conversations))
                two.append(await one_count(Path(base), model_url, 2, conversations))
            bench.note(
                f"run {index + 1}: p99 {one[-1].p99:.1f} s with 1 worker, {two[-1].p99:.1f} s with 2; "
                f"{one[-1].rate:.0f} and {two[-1].rate:.0f} turns/s"
            )
    ideal = f"ideal p99 (slots never idle): {ideal_p99:.1f} s"
    for label, results in (("2 workers", two), ("1 worker", one)):
        bench.add(f"p99 queued to answer, {label}", "s", [r.p99 for r in results], baseline=ideal,
                  baseline_samples=[ideal_p99] * runs, paired=True, target="<= 1.5")  # fmt: skip
    bench.add("p99 queued to answer, 2 workers", "s", [r.p99 for r in two], baseline="the same, 1 worker",
              baseline_samples=[r.p99 for r in one], paired=True)  # fmt: skip
    bench.add("turns/s of the wave, 2 workers", "turns/s", [r.rate for r in two], baseline="the same, 1 worker",
              baseline_samples=[r.rate for r in one], paired=True, direction="higher")  # fmt: skip
    for label, results in (("2 workers", two), ("1 worker", one)):
        bench.add(f"RSS per idle runtime, {label}", "B", [r.rss_per_runtime for r in results])
    shown = {"2 workers": ("supervisor", "workers", "fake Bot API"), "1 worker": ("supervisor", "fake Bot API")}
    for label, results in (("2 workers", two), ("1 worker", one)):
        for part in shown[label]:
            name = "the host" if (part, label) == ("supervisor", "1 worker") else part  # one process does it all
            bench.add(f"CPU per turn, {name}, {label}", "s", [r.cpu[part] for r in results])
    restarts = [r.restart for r in two if r.restart is not None]
    bench.add("a killed worker's chats answered again", "s", restarts, baseline="cold start, 2 workers",
              baseline_samples=[r.cold_start for r in two], paired=True, target="<= 1")  # fmt: skip
    bench.add("cold start, 2 workers", "s", [r.cold_start for r in two], baseline="cold start, 1 worker",
              baseline_samples=[r.cold_start for r in one], paired=True)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--conversations", type=int, default=5000)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
