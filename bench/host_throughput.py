"""Host throughput: many channels each sending one message at once, a model that takes 50 ms per call.

A real ``Host`` (fake channel, a wakeup engine that answers every message, the kernel tools, fact logs with
the ``turn`` fsync policy) gets one message in each of N new channels at the same moment: every one spawns a
runtime, runs a turn whose model call takes 50 ms (a ``send_message`` call), and sends a reply. The provider
allows 64 calls in flight, so the ideal is 64 / 0.05 s = 1,280 turns per second. Prints the wall time from the
first dispatch to the last reply, the throughput and its share of the ideal (target >= 80 %), for each run and
the median. As a baseline measured in the same run, the same number of model calls is made at once straight
through the host's gateway (the ceiling this machine allows the host: HTTP client and server included). The
fake model server runs in its own process; logs go to /dev/shm when it exists.

    .venv/bin/python bench/host_throughput.py [--quick] [--channels N] [--runs N] [--dir PATH]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from ishiki_host.core.clock import SystemClock
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

LATENCY = 0.05
CONCURRENCY = 64
SERVER = f"""
import sys
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall
with FakeOpenAIServer() as server:
    server.default = Reply(tool_calls=(ScriptedCall("send_message", {{"messages": ["ok"]}}),))
    server.latency = {LATENCY}
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


def models(base_url: str) -> str:
    return (
        f"providers:\n  fake:\n    api: openai-completions\n    baseUrl: {base_url}\n"
        f"    maxConcurrency: {CONCURRENCY}\n    models: [{{id: fake-model}}]\n"
        "groups:\n  default:\n    models: [fake:fake-model]\n"
    )


async def gateway_share(th: TestHost, calls: int) -> float:
    """Share of the ideal that ``calls`` simultaneous model calls straight through the gateway reach."""
    model = th.host.gateways.gateway.model("default")
    request = ModelRequest((Message.system("You are a benchmark."), Message.user("hello")))
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(calls):
            tg.start_soon(model.generate, request)
    return calls / (time.perf_counter() - start) / (CONCURRENCY / LATENCY)


async def one_run(base_url: str, channels: int, base: Path, run: int) -> tuple[float, float]:
    root = write_config(base / f"run{run}", profiles={"ana": profile_yaml()}, models=models(base_url), host=host_yaml())
    async with TestHost(root, clock=SystemClock()) as th:
        baseline = await gateway_share(th, channels)
        bot = th.channel()

        async def wave() -> float:
            """One message in each channel at once; seconds until every channel got its reply."""
            sent = len(bot.sent)
            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for index in range(channels):
                    tg.start_soon(lambda i=index: bot.say("hello", channel_id=f"private:{i}"))
            with anyio.fail_after(120):
                await bot.wait_sent(sent + channels)
            return time.perf_counter() - start

        elapsed = await wave()  # every message spawns its runtime
        answered = len({m.channel_id for m in bot.sent})
        warm = await wave()  # the same channels again: the runtimes are there
    ideal = CONCURRENCY / LATENCY
    throughput = channels / elapsed
    print(
        f"run {run + 1}: {answered}/{channels} channels answered in {elapsed:.2f} s: {throughput:,.0f} turns/s "
        f"= {throughput / ideal:.0%} of the ideal {ideal:,.0f}/s; again with their runtimes alive: "
        f"{channels / warm / ideal:.0%}; the gateway alone: {baseline:.0%}"
    )
    assert answered == channels, "some channel got no answer"
    return throughput / ideal, baseline


async def measure(base_url: str, channels: int, runs: int, base: Path) -> float:
    results = [await one_run(base_url, channels, base, run) for run in range(runs)]
    share = statistics.median(r[0] for r in results)
    baseline = statistics.median(r[1] for r in results)
    verdict = "ok" if share >= 0.8 else "BELOW TARGET"
    print(
        f"host throughput: {share:.0%} of the ideal, {share / baseline:.0%} of what the gateway alone reaches here "
        f"({baseline:.0%}); median of {runs} runs of {channels} channels; target >= 80 % of the ideal"
    )
    print(verdict)
    return share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 channels x 1 run")
    parser.add_argument("--channels", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    default_dir = "/dev/shm" if Path("/dev/shm").is_dir() else None
    parser.add_argument("--dir", default=default_dir, help="where the config dirs and fact logs go")
    args = parser.parse_args()
    channels, runs = (1000, 1) if args.quick else (args.channels, args.runs)
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    base_url = proc.stdout.readline().strip()
    try:
        with tempfile.TemporaryDirectory(dir=args.dir) as base:
            anyio.run(measure, base_url, channels, runs, Path(base))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)


if __name__ == "__main__":
    main()
