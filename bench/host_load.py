"""Host load: 5,000 conversations at once against a model that takes 100 ms, with ``max_concurrency`` 128.

A real ``Host`` (fake channel, a wakeup engine that answers every message, the kernel tools, fact logs with
the ``turn`` fsync policy) gets one message in each of 5,000 new chats at the same moment; every message
spawns a runtime whose turn makes one model call (100 ms, a ``send_message`` call) and sends a reply. The
provider allows 128 calls in flight, so the ideal is 128 / 0.1 s = 1,280 turns per second and the whole
wave takes 5,000 / 1,280 = 3.9 s at best. Reported per run: turns per second from the first dispatch to the
last reply (against the ideal), the p99 of each chat's time from dispatch to its reply (against the ideal
p99: the time the 99th percentile call would end if the 128 slots never idled), the RSS with every runtime
alive and at its peak, and after the load stopped and every runtime was evicted (against the RSS before the
load; the allocator keeps most of it, see host_memory.py for the level it settles at), the number of asyncio
tasks then (against the number before the load: a task left behind is a leak) and of runtime objects still
alive (none may be). The fake model server runs in its own process; fact logs go to /dev/shm when it exists.

    .venv/bin/python bench/host_load.py [--quick] [--conversations N] [--runs N] [--dir PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from _fake_server import fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run

from ishiki_host.channels.base import SendResult
from ishiki_host.core.clock import SystemClock
from ishiki_host.runtime.runtime import AgentRuntime
from ishiki_host.testing.channels import FakeChannel, FakeConnection
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

LATENCY = 0.1
CONCURRENCY = 128


class TimedConnection(FakeConnection):
    """A fake connection that notes when each chat got its first reply."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.replied: dict[str, float] = {}

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Note the time, then record as the fake does."""
        self.replied.setdefault(channel_id, time.perf_counter())
        return await super().send(channel_id, text, reply_to=reply_to)


class TimedChannel(FakeChannel):
    """The fake channel, making ``TimedConnection``s."""

    def create(self, ctx: Any, account: Mapping[str, Any]) -> TimedConnection:
        """A timed connection dispatching to ``ctx``."""
        return TimedConnection(ctx, self_id=account.get("self_id", "bot"), limit=account.get("limit", 4096))


def status_mib(field: str) -> float:
    """A ``/proc/self/status`` size (``VmRSS``, ``VmHWM``) in MiB, after a full collection."""
    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def tasks() -> int:
    """The asyncio tasks alive in this loop."""
    return len(asyncio.all_tasks())


@dataclass(frozen=True)
class Result:
    """One run's readings."""

    rate: float
    p99: float
    rss_alive: float
    rss_peak: float
    rss_before: float
    rss_after: float
    tasks_before: int
    tasks_after: int
    runtimes_after: int


async def one_run(base_url: str, conversations: int, base: Path, index: int) -> Result:
    """One wave in a new config dir (see the module docstring)."""
    root = write_config(base / f"run{index}", profiles={"ana": profile_yaml()},
                        models=models_yaml(base_url, CONCURRENCY), host=host_yaml())  # fmt: skip
    async with TestHost(root, clock=SystemClock(), plugins={"ishiki.channel.fake": TimedChannel}) as th:
        bot = th.channel()
        assert isinstance(bot, TimedConnection)
        route = th.host.routes.get("ana")
        assert route is not None
        rss_before, tasks_before = status_mib("VmRSS"), tasks()
        started: dict[str, float] = {}

        async def say(channel_id: str) -> None:
            started[channel_id] = time.perf_counter()
            await bot.say("hello", channel_id=channel_id)

        first = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for number in range(conversations):
                tg.start_soon(say, f"private:{number}")
        with anyio.fail_after(600):
            await bot.wait_sent(conversations)
            for runtime in route.runtimes.values():
                await runtime.settled()
        if len(bot.replied) != conversations:
            raise SystemExit(f"only {len(bot.replied)} of {conversations} chats got an answer")
        rate = conversations / (max(bot.replied.values()) - first)
        waits = sorted(bot.replied[channel] - started[channel] for channel in started)
        p99 = waits[min(len(waits) - 1, math.ceil(0.99 * len(waits)) - 1)]
        rss_alive, rss_peak = status_mib("VmRSS"), status_mib("VmHWM")
        bot.sent.clear()  # the fake channel's record is not the host's memory
        bot.replied.clear()
        alive = list(route.runtimes.values())
        route.idle_seconds = 0.0
        route.evict_idle()
        with anyio.fail_after(120):
            for runtime in alive:
                await runtime.stop()
            while route.closing:  # the route's stop tasks end right after their runtime closed
                await anyio.lowlevel.checkpoint()
        del alive, runtime
        rss_after, tasks_after = status_mib("VmRSS"), tasks()
        runtimes_after = sum(1 for o in gc.get_objects() if isinstance(o, AgentRuntime))
    return Result(rate, p99, rss_alive, rss_peak, rss_before, rss_after, tasks_before, tasks_after, runtimes_after)


async def measure(bench: Bench) -> None:
    """Start the fake model server in its own process; runs in temporary config dirs."""
    runs = bench.runs(quick=1, full=3)
    conversations = 1000 if bench.quick and bench.args.conversations == 5000 else bench.args.conversations
    ideal_rate = CONCURRENCY / LATENCY
    ideal_p99 = math.ceil(0.99 * conversations / CONCURRENCY) * LATENCY
    bench.note(f"{runs} run(s) of {conversations:,} conversations at once; model latency "
               f"{LATENCY * 1e3:.0f} ms, max_concurrency {CONCURRENCY}")  # fmt: skip
    with fake_model_process(LATENCY) as base_url, tempfile.TemporaryDirectory(dir=bench.args.dir) as base:
        results = [await one_run(base_url, conversations, Path(base), index) for index in range(runs)]
    mib = 2**20
    bench.add(f"turns/s, {conversations:,} conversations at once", "turns/s", [r.rate for r in results],
              baseline=f"ideal {CONCURRENCY} / {LATENCY} s", baseline_samples=[ideal_rate] * runs, paired=True,
              direction="higher", target=">= 0.8")  # fmt: skip
    bench.add("p99 from dispatch to reply", "s", [r.p99 for r in results], baseline="ideal p99 (slots never idle)",
              baseline_samples=[ideal_p99] * runs, paired=True, target="<= 1.5")  # fmt: skip
    bench.add(
        f"RSS with {conversations:,} runtimes alive",
        "B",
        [r.rss_alive * mib for r in results],
        baseline="RSS before the load",
        baseline_samples=[r.rss_before * mib for r in results],
        paired=True,
    )
    bench.add("RSS peak (VmHWM)", "B", [r.rss_peak * mib for r in results])
    bench.add("RSS once every runtime was evicted", "B", [r.rss_after * mib for r in results],
              baseline="RSS before the load", baseline_samples=[r.rss_before * mib for r in results], paired=True,
              target="~1")  # fmt: skip
    bench.add("asyncio tasks once every runtime was evicted", "tasks", [r.tasks_after for r in results],
              baseline="asyncio tasks before the load", baseline_samples=[r.tasks_before for r in results],
              paired=True, target="<= 1")  # fmt: skip
    bench.add("runtime objects alive once every runtime was evicted", "runtimes", [r.runtimes_after for r in results],
              target="<= 0")  # fmt: skip
    bench.note(f"median rate {statistics.median(r.rate for r in results):,.0f} turns/s of an ideal {ideal_rate:,.0f}")


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--conversations", type=int, default=5000)
    add_memory_dir_option(parser)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
