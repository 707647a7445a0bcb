"""Host memory: RSS per idle runtime, and RSS after many runtimes were spawned and evicted.

A real ``Host`` (fake channel, a wakeup engine that answers every message, an instant fake model in its own
process, the host's clock faked so eviction is exact) gets one message in each of N channels: every message
spawns a runtime, which answers and goes idle. First, ``--idle`` runtimes are kept alive and the RSS they add,
per runtime, is printed. Then they and ``--churn`` more (in batches) are spawned and evicted
(``runtime_idle_seconds`` passes); the RSS after the churn is compared with the RSS measured after the first
batch had been evicted (the baseline: allocator pools and caches warm). Fact logs go to /dev/shm when it exists.

One run (RSS is a single reading, not a timing). Target: RSS after the churn ~1x the baseline.

A second host measures what an idle runtime of a longer chat holds: ``--chats`` runtimes each answer 8
messages of 2 KB; the Python heap they hold once idle (``tracemalloc``, which sees frees that RSS hides) is
read per runtime, then again once the reaper has cooled them (their fact logs' cached entries given back).

    .venv/bin/python bench/host_memory.py [--quick] [--idle N] [--churn N] [--batch N] [--chats N] [--dir PATH]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import tracemalloc
from pathlib import Path

import anyio
from _fake_server import fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run

from ishiki_host.core.clock import FakeClock
from ishiki_host.host.routes import ProfileRoute, reap_interval
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

IDLE_SECONDS = 60.0


def rss_mib() -> float:
    """The resident set size of this process (after a full collection)."""
    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def config_dir(base: Path, name: str, base_url: str) -> Path:
    """A config dir whose one profile answers every message, on the fake model, evicting after ``IDLE_SECONDS``."""
    host = host_yaml(extra=f"runtime_idle_seconds: {IDLE_SECONDS}\n")
    return write_config(base / name, profiles={"ana": profile_yaml()}, models=models_yaml(base_url, 32), host=host)


async def say_in_each(th: TestHost, route: ProfileRoute, channels: range, text: str) -> None:
    """``text`` in each of ``channels`` at once; returns once every runtime has answered and settled."""
    bot = th.channel()
    async with anyio.create_task_group() as tg:
        for index in channels:
            tg.start_soon(lambda i=index: bot.say(text, channel_id=f"private:{i}"))
    with anyio.fail_after(300):
        await bot.wait_sent(len(channels))
        for runtime in route.runtimes.values():
            await runtime.settled()
    bot.sent.clear()  # the fake channel's own record is not the host's memory


async def measure_host(bench: Bench, base_url: str, idle: int, churn: int, batch: int, base: Path) -> None:
    """Warm up, measure RSS with idle runtimes, then churn and measure again."""
    clock = FakeClock()
    async with TestHost(config_dir(base, "bot", base_url), clock=clock) as th:
        route = th.host.routes.get("ana")
        assert route is not None
        serial = 0

        async def spawn(count: int) -> None:
            nonlocal serial
            first, serial = serial, serial + count
            await say_in_each(th, route, range(first, first + count), "hello")

        async def evict_all() -> None:
            await clock.advance(IDLE_SECONDS + reap_interval(IDLE_SECONDS))
            with anyio.fail_after(300):
                while route.runtimes or route.closing:
                    await clock.advance(reap_interval(IDLE_SECONDS))
                    await anyio.sleep(0.01)

        await spawn(batch)  # warm everything up once
        await evict_all()
        before = rss_mib()
        await spawn(idle)
        alive = len(route.runtimes)
        during = rss_mib()
        bench.add(f"RSS per idle runtime ({alive:,} alive)", "B", [(during - before) * 2**20 / alive])
        await evict_all()
        baseline = rss_mib()
        done = 0
        while done < churn:
            count = min(batch, churn - done)
            await spawn(count)
            await evict_all()
            done += count
        after = rss_mib()
        bench.note(f"{route.spawned:,} spawns and {route.evicted:,} evictions in all")
    bench.add(f"RSS after {done + idle + batch:,} runtimes spawned and evicted", "B", [after * 2**20],
              baseline="RSS after the first idle runtimes were evicted", baseline_samples=[baseline * 2**20],
              target="~1")  # fmt: skip


CHAT_TURNS = 8
CHAT_MESSAGE = "x" * 2000


async def measure_chats(bench: Bench, base_url: str, chats: int, base: Path) -> None:
    """Idle runtimes of longer chats: their Python heap, then once cooled."""
    clock = FakeClock()
    async with TestHost(config_dir(base, "chats", base_url), clock=clock) as th:
        route = th.host.routes.get("ana")
        assert route is not None
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for turn in range(CHAT_TURNS):
                await say_in_each(th, route, range(chats), f"{CHAT_MESSAGE} {turn}")
            gc.collect()
            idle = (tracemalloc.get_traced_memory()[0] - before) / chats
            await clock.advance(reap_interval(IDLE_SECONDS))  # one look of the reaper: they are cooled
            await anyio.wait_all_tasks_blocked()
            gc.collect()
            cooled = (tracemalloc.get_traced_memory()[0] - before) / chats
        finally:
            tracemalloc.stop()
    name = f"Python heap per idle runtime, {CHAT_TURNS} turns of 2 KB messages"
    bench.add(f"{name}, cooled", "B", [cooled], baseline=f"{name}, just idle", baseline_samples=[idle])


async def measure(bench: Bench) -> None:
    """Start the fake model server in its own process and measure in a temporary config dir."""
    idle, churn = (500, 2000) if bench.quick else (bench.args.idle, bench.args.churn)
    chats = 100 if bench.quick else bench.args.chats
    with fake_model_process() as base_url, tempfile.TemporaryDirectory(dir=bench.args.dir) as base:
        await measure_host(bench, base_url, idle, churn, bench.args.batch, Path(base))
        await measure_chats(bench, base_url, chats, Path(base))


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--churn", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--chats", type=int, default=300, help="runtimes of the longer-chat measure")
    add_memory_dir_option(parser)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
