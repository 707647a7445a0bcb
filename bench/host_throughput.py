"""Host throughput: many channels each sending one message at once, a model that takes 50 ms per call.

A real ``Host`` (fake channel, a wakeup engine that answers every message, the kernel tools, fact logs with
the ``turn`` fsync policy) gets one message in each of N new channels at the same moment: every one spawns a
runtime, runs a turn whose model call takes 50 ms (a ``send_message`` call), and sends a reply. The provider
allows 64 calls in flight, so the ideal is 64 / 0.05 s = 1,280 turns per second. Reports turns per second from
the first dispatch to the last reply, against the ideal (target >= 0.8 of it), with new runtimes and again with
the runtimes alive. As a second baseline measured in the same run, the same number of model calls is made at
once straight through the host's gateway (the ceiling this machine allows the host: HTTP client and server
included). The fake model server runs in its own process; logs go to /dev/shm when it exists.

Wall-clock rates swing with whatever else the machine runs, so the CPU the host's event-loop thread spends per
turn (runtimes alive) is reported too, against its CPU per model call straight through the gateway, with the
part of it spent in the garbage collector (``gc.callbacks``): where a turn's time goes beyond the model call.

    .venv/bin/python bench/host_throughput.py [--quick] [--channels N] [--runs N] [--dir PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _fake_server import fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run

from ishiki_host.core.clock import SystemClock
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

LATENCY = 0.05
CONCURRENCY = 64


class Meter:
    """Event-loop thread CPU and collector time over a block (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.cpu = self.gc = 0.0
        self._gc_start = 0.0

    def _collecting(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.gc += time.perf_counter() - self._gc_start

    def __enter__(self) -> Meter:
        self.cpu, self.gc = time.thread_time(), 0.0
        gc.callbacks.append(self._collecting)
        return self

    def __exit__(self, *exc_info: object) -> None:
        gc.callbacks.remove(self._collecting)
        self.cpu = time.thread_time() - self.cpu


async def gateway_rate(th: TestHost, calls: int) -> tuple[float, float]:
    """Calls per second that ``calls`` simultaneous model calls straight through the gateway reach, and the
    event-loop thread's CPU seconds per call."""
    model = th.host.gateways.gateway.model("default")
    request = ModelRequest((Message.system("You are a benchmark."), Message.user("hello")))
    start = time.perf_counter()
    with Meter() as meter:
        async with anyio.create_task_group() as tg:
            for _ in range(calls):
                tg.start_soon(model.generate, request)
    return calls / (time.perf_counter() - start), meter.cpu / calls


async def one_run(base_url: str, channels: int, base: Path, run: int) -> tuple[float, ...]:
    """Turns per second with new runtimes, with live ones, the gateway's own call rate; CPU seconds per turn
    (runtimes alive), of which in the collector, and per gateway call."""
    root = write_config(
        base / f"run{run}",
        profiles={"ana": profile_yaml()},
        models=models_yaml(base_url, CONCURRENCY),
        host=host_yaml(),
    )
    async with TestHost(root, clock=SystemClock()) as th:
        baseline, call_cpu = await gateway_rate(th, channels)
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
        with Meter() as meter:
            warm = await wave()  # the same channels again: the runtimes are there
    if answered != channels:
        raise SystemExit(f"only {answered} of {channels} channels got an answer")
    return channels / elapsed, channels / warm, baseline, meter.cpu / channels, meter.gc / channels, call_cpu


async def measure(bench: Bench) -> None:
    """Start the fake model server in its own process; paired runs in temporary config dirs."""
    runs = bench.runs(quick=1, full=3)
    channels = bench.args.channels
    ideal = CONCURRENCY / LATENCY
    bench.note(f"{runs} runs of {channels} channels; model latency {LATENCY * 1e3:.0f} ms, concurrency {CONCURRENCY}")
    with fake_model_process(LATENCY) as base_url, tempfile.TemporaryDirectory(dir=bench.args.dir) as base:
        results = [await one_run(base_url, channels, Path(base), run) for run in range(runs)]
    cold, warm, gateway, turn_cpu, turn_gc, call_cpu = ([r[i] for r in results] for i in range(6))
    ideals = [ideal] * runs
    name = f"ideal {CONCURRENCY} / {LATENCY} s"
    bench.add("turns, new runtime per channel", "turns/s", cold, baseline=name, baseline_samples=ideals,
              paired=True, direction="higher", target=">= 0.8")  # fmt: skip
    bench.add("turns, runtimes alive", "turns/s", warm, baseline=name, baseline_samples=ideals,
              paired=True, direction="higher", target=">= 0.8")  # fmt: skip
    bench.add("model calls straight through the gateway", "calls/s", gateway, baseline=name,
              baseline_samples=ideals, paired=True, direction="higher")  # fmt: skip
    bench.add("event-loop CPU per turn, runtimes alive", "s", turn_cpu, baseline="CPU per call through the gateway",
              baseline_samples=call_cpu, paired=True)  # fmt: skip
    bench.add("garbage collection per turn, runtimes alive", "s", turn_gc, baseline="CPU per turn",
              baseline_samples=turn_cpu, paired=True)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--channels", type=int, default=1000)
    add_memory_dir_option(parser)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
