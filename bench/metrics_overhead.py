"""What the host's metrics cost: a turn with ``/metrics`` collected against the same turn without, and a scrape
of ``/metrics`` with 1,000 runtimes alive.

Two real hosts in one process, as in ``bench/host_overhead.py`` (fake channel, a wakeup engine that answers
every message, native toolcall, the kernel tools, fact logs with fsync ``turn`` on /dev/shm, the fake model
server in its own process answering at once with a ``send_message`` call), both serving HTTP on a loopback
port: one with ``http.metrics: true`` (every turn, model call, tool call and fsync counted), the other with
``http.metrics: false``. The timer runs from ``dispatch`` to the reply reaching the channel. A run is the p50 of
200 / 1,000 turns on each host, alternately (paired); 3 / 5 runs. The usage counts and the answered-message
line are on in both (the line is not written: no log handler takes INFO here).

Then the metrics host answers one message in each of 1,000 new chats, and ``GET /metrics`` is timed over
real HTTP (httpx, one kept-alive connection) against ``GET /healthz`` on the same connection: the ratio is what
collecting and rendering the page adds to a request. A run is the p50 of 20 / 100 scrapes; 3 / 5 runs, paired.

    .venv/bin/python bench/metrics_overhead.py [--quick] [--turns N] [--runtimes N] [--runs N] [--dir PATH]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from _fake_server import fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run
from host_overhead import CHANNELS, CurrentTurnContext
from host_overhead import timed_turn as turn

from ishiki_host.core.clock import SystemClock
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

PLUGINS = {"ishiki.engine.context.current": CurrentTurnContext}


def config_dir(base: Path, name: str, base_url: str, metrics: bool) -> Path:
    profile = profile_yaml("fake:bot: ['*']").replace("context: {engine: plain}", "context: {engine: current}")
    http = f"http: {{listen: '127.0.0.1:0', metrics: {str(metrics).lower()}}}\n"
    host = host_yaml(extra=f"fsync: turn\nruntime_idle_seconds: 3600\n{http}")
    return write_config(base / name, profiles={"ana": profile}, models=models_yaml(base_url, 64), host=host)


async def measure_turns(bench: Bench, on: TestHost, off: TestHost) -> None:
    runs = bench.runs(quick=3, full=5)
    turns = 200 if bench.quick else bench.args.turns
    for th in (on, off):
        for channel in range(CHANNELS):  # spawn the runtimes and warm every path up
            await turn(th, channel)
    with_metrics: list[float] = []
    without: list[float] = []
    for _ in range(runs):
        with_metrics.append(statistics.median([await turn(on, i % CHANNELS) for i in range(turns)]))
        without.append(statistics.median([await turn(off, i % CHANNELS) for i in range(turns)]))
    bench.note(f"{runs} runs of {turns} turns per host over {CHANNELS} chats")
    bench.add("turn with metrics collected, p50", "s", with_metrics,
              baseline="the same turn with http.metrics: false, p50", baseline_samples=without, paired=True,
              target="~1")  # fmt: skip


async def measure_scrape(bench: Bench, th: TestHost) -> None:
    runs = bench.runs(quick=3, full=5)
    scrapes = 20 if bench.quick else 100
    runtimes = bench.args.runtimes
    bot = th.channel()
    sent = len(bot.sent)
    async with anyio.create_task_group() as tg:
        for index in range(runtimes):
            tg.start_soon(lambda i=index: bot.say("hello", channel_id=f"private:{CHANNELS + i}"))
    with anyio.fail_after(300):
        await bot.wait_sent(sent + runtimes)
    alive = sum(len(route.runtimes) for route in th.host.routes)
    base = th.host.http.base_url
    assert base is not None
    async with httpx.AsyncClient(base_url=base) as client:

        async def timed(path: str) -> float:
            start = time.perf_counter()
            response = await client.get(path)
            elapsed = time.perf_counter() - start
            if response.status_code != 200:
                raise SystemExit(f"GET {path} answered {response.status_code}")
            return elapsed

        page = await client.get("/metrics")
        page_samples: list[float] = []
        health_samples: list[float] = []
        for _ in range(runs):
            page_samples.append(statistics.median([await timed("/metrics") for _ in range(scrapes)]))
            health_samples.append(statistics.median([await timed("/healthz") for _ in range(scrapes)]))
    if f'ishiki_runtimes{{profile="ana"}} {float(alive)}' not in page.text:
        raise SystemExit(f"the page does not show the {alive} runtimes alive")
    bench.note(f"{alive:,} runtimes alive; the page is {len(page.content):,} bytes; {runs} runs of {scrapes} scrapes")
    bench.add(f"GET /metrics with {runtimes:,} runtimes alive, p50", "s", page_samples,
              baseline="GET /healthz on the same connection, p50", baseline_samples=health_samples,
              paired=True)  # fmt: skip


async def measure(bench: Bench) -> None:
    """Start the fake model server in its own process and both hosts in a temporary directory."""
    with fake_model_process() as base_url, tempfile.TemporaryDirectory(dir=bench.args.dir) as base:
        root_on = config_dir(Path(base), "on", base_url, metrics=True)
        root_off = config_dir(Path(base), "off", base_url, metrics=False)
        async with (
            TestHost(root_on, plugins=PLUGINS, clock=SystemClock()) as on,
            TestHost(root_off, plugins=PLUGINS, clock=SystemClock()) as off,
        ):
            await measure_turns(bench, on, off)
            await measure_scrape(bench, on)


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--turns", type=int, default=1000, help="turns per run and host (full mode)")
    parser.add_argument("--runtimes", type=int, default=1000, help="runtimes alive when /metrics is scraped")
    add_memory_dir_option(parser)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
