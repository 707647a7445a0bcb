"""Host throughput: many channels each sending one message at once, a model that takes 50 ms per call.

A real ``Host`` (fake channel, a wakeup engine that answers every message, the kernel tools, fact logs with
the ``turn`` fsync policy) gets one message in each of N new channels at the same moment: every one spawns a
runtime, runs a turn whose model call takes 50 ms (a ``send_message`` call), and sends a reply. The provider
allows 64 calls in flight, so the ideal is 64 / 0.05 s = 1,280 turns per second. Reports turns per second from
the first dispatch to the last reply, against the ideal (target >= 0.8 of it), with new runtimes and again with
the runtimes alive. As a second baseline measured in the same run, the same number of model calls is made at
once straight through the host's gateway (the ceiling this machine allows the host: HTTP client and server
included). The fake model server runs in its own process; logs go to /dev/shm when it exists.

    .venv/bin/python bench/host_throughput.py [--quick] [--channels N] [--runs N] [--dir PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _fake_server import fake_model_process, models_yaml
from _report import Bench, run

from ishiki_host.core.clock import SystemClock
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

LATENCY = 0.05
CONCURRENCY = 64


async def gateway_rate(th: TestHost, calls: int) -> float:
    """Calls per second that ``calls`` simultaneous model calls straight through the gateway reach."""
    model = th.host.gateways.gateway.model("default")
    request = ModelRequest((Message.system("You are a benchmark."), Message.user("hello")))
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(calls):
            tg.start_soon(model.generate, request)
    return calls / (time.perf_counter() - start)


async def one_run(base_url: str, channels: int, base: Path, run: int) -> tuple[float, float, float]:
    """Turns per second with new runtimes, with live ones, and the gateway's own call rate."""
    root = write_config(
        base / f"run{run}",
        profiles={"ana": profile_yaml()},
        models=models_yaml(base_url, CONCURRENCY),
        host=host_yaml(),
    )
    async with TestHost(root, clock=SystemClock()) as th:
        baseline = await gateway_rate(th, channels)
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
    if answered != channels:
        raise SystemExit(f"only {answered} of {channels} channels got an answer")
    return channels / elapsed, channels / warm, baseline


async def measure(bench: Bench) -> None:
    """Start the fake model server in its own process; paired runs in temporary config dirs."""
    runs = bench.runs(quick=1, full=3)
    channels = bench.args.channels
    ideal = CONCURRENCY / LATENCY
    bench.note(f"{runs} runs of {channels} channels; model latency {LATENCY * 1e3:.0f} ms, concurrency {CONCURRENCY}")
    with fake_model_process(LATENCY) as base_url, tempfile.TemporaryDirectory(dir=bench.args.dir) as base:
        results = [await one_run(base_url, channels, Path(base), run) for run in range(runs)]
    cold, warm, gateway = ([r[i] for r in results] for i in range(3))
    ideals = [ideal] * runs
    name = f"ideal {CONCURRENCY} / {LATENCY} s"
    bench.add("turns, new runtime per channel", "turns/s", cold, baseline=name, baseline_samples=ideals,
              paired=True, direction="higher", target=">= 0.8")  # fmt: skip
    bench.add("turns, runtimes alive", "turns/s", warm, baseline=name, baseline_samples=ideals,
              paired=True, direction="higher", target=">= 0.8")  # fmt: skip
    bench.add("model calls straight through the gateway", "calls/s", gateway, baseline=name,
              baseline_samples=ideals, paired=True, direction="higher")  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--channels", type=int, default=1000)
    default_dir = "/dev/shm" if Path("/dev/shm").is_dir() else None
    parser.add_argument("--dir", default=default_dir, help="where the config dirs and fact logs go")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
