"""Host memory: RSS per idle runtime, and RSS after many runtimes were spawned and evicted.

A real ``Host`` (fake channel, a wakeup engine that answers every message, an instant fake model in its own
process, the host's clock faked so eviction is exact) gets one message in each of N channels: every message
spawns a runtime, which answers and goes idle. First, ``--idle`` runtimes are kept alive and the RSS they add,
per runtime, is printed. Then they and ``--churn`` more (in batches) are spawned and evicted
(``runtime_idle_seconds`` passes); the RSS after the churn is compared with the RSS measured after the first
batch had been evicted (the baseline: allocator pools and caches warm). Fact logs go to /dev/shm when it exists.

    .venv/bin/python bench/host_memory.py [--quick] [--idle N] [--churn N] [--batch N] [--dir PATH]
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

from ishiki_host.core.clock import FakeClock
from ishiki_host.runtime.routes import reap_interval
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

SERVER = """
import sys
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall
with FakeOpenAIServer() as server:
    server.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["ok"]}),))
    print(server.base_url, flush=True)
    sys.stdin.read()
"""
IDLE_SECONDS = 60.0


def rss_mib() -> float:
    """The resident set size of this process (after a full collection)."""
    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def models(base_url: str) -> str:
    return (
        f"providers:\n  fake:\n    api: openai-completions\n    baseUrl: {base_url}\n    maxConcurrency: 32\n"
        "    models: [{id: fake-model}]\ngroups:\n  default:\n    models: [fake:fake-model]\n"
    )


async def measure(base_url: str, idle: int, churn: int, batch: int, base: Path) -> None:
    clock = FakeClock()
    host = host_yaml(extra=f"runtime_idle_seconds: {IDLE_SECONDS}\nscheduler: {{interactive_grace_seconds: 0}}\n")
    root = write_config(base / "bot", profiles={"ana": profile_yaml()}, models=models(base_url), host=host)
    async with TestHost(root, clock=clock) as th:
        bot = th.channel()
        route = th.host.routes.get("ana")
        assert route is not None
        serial = 0

        async def spawn(count: int) -> None:
            nonlocal serial
            first, serial = serial, serial + count
            sent = 0
            async with anyio.create_task_group() as tg:
                for index in range(first, first + count):
                    tg.start_soon(lambda i=index: bot.say("hello", channel_id=f"private:{i}"))
            with anyio.fail_after(300):
                await bot.wait_sent(sent + count)
                for runtime in route.runtimes.values():
                    await runtime.settled()
            bot.sent.clear()  # the fake channel's own record is not the host's memory

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
        each = (during - before) * 1024 / alive
        print(f"{alive} idle runtimes: RSS {before:.1f} -> {during:.1f} MiB = {each:.1f} KiB each")
        await evict_all()
        baseline = rss_mib()
        print(f"after evicting them: RSS {baseline:.1f} MiB")
        done = 0
        while done < churn:
            count = min(batch, churn - done)
            await spawn(count)
            await evict_all()
            done += count
        after = rss_mib()
        print(
            f"after {done + idle + batch:,} runtimes spawned and evicted ({route.spawned:,} spawns, "
            f"{route.evicted:,} evictions): RSS {after:.1f} MiB, {after - baseline:+.1f} MiB "
            f"({(after - baseline) / baseline:+.1%}) against {baseline:.1f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 idle, 2,000 churned")
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--churn", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500)
    default_dir = "/dev/shm" if Path("/dev/shm").is_dir() else None
    parser.add_argument("--dir", default=default_dir, help="where the config dir and fact logs go")
    args = parser.parse_args()
    idle, churn = (500, 2000) if args.quick else (args.idle, args.churn)
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    base_url = proc.stdout.readline().strip()
    try:
        with tempfile.TemporaryDirectory(dir=args.dir) as base:
            anyio.run(measure, base_url, idle, churn, args.batch, Path(base))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)


if __name__ == "__main__":
    main()
