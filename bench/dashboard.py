"""What the dashboard costs: its pages with 1,000 runtimes alive against an empty host, and a host's turn while
the dashboard is open and streaming against the same turn with nobody watching.

Two real hosts in one process, set up as in ``bench/host_overhead.py`` (fake channel, a wakeup engine that answers
every message, native toolcall, the kernel tools, fact logs with fsync ``turn`` on /dev/shm, the fake model
server in its own process answering at once with a ``send_message`` call), each serving HTTP on a loopback port
with ``/metrics`` and the dashboard (``plugins: {dashboard: {token}}``). Logging is at INFO, as ``ishiki run``
has it by default, so the host's log ring (what the dashboard's log page streams) gets the lines a real host
writes.

**Pages.** One host answers one message in each of 1,000 new chats; the other has answered none. The overview
page and ``/dashboard/api/overview``, the conversations page and ``/metrics`` are timed over real
HTTP (httpx, one kept-alive connection per host, signed in with the token); a run is the p50 of 20 / 100
requests of one path on each host, alternately (paired); 3 / 5 runs.

**Turns.** On the empty host, a run is the p50 of 200 / 1,000 turns over 8 chats with no dashboard client, then
as many with a dashboard open in another process (so its reading does not share the host's core): one
server-sent-event stream on the log page and one on each of the 8 chats' conversation streams, every one of them
checked to have carried events; 3 / 5 runs, paired.

    .venv/bin/python bench/dashboard.py [--quick] [--turns N] [--runtimes N] [--runs N] [--dir PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from urllib.parse import quote

import anyio
import httpx
from _fake_server import fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run
from anyio.streams.buffered import BufferedByteReceiveStream
from host_overhead import CHANNELS, CurrentTurnContext
from metrics_overhead import turn

from ishiki_host.core.clock import SystemClock
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

PLUGINS = {"ishiki.engine.context.current": CurrentTurnContext}
TOKEN = "bench-dashboard-token-0123456789"
PAGES = (
    "/dashboard/",
    "/dashboard/api/overview",
    "/dashboard/conversations",
    "/metrics",
)
LOG_STREAM = "/dashboard/logs/stream"
CONVERSATION_STREAM = "/dashboard/conversations/stream?key={key}"

# The dashboard open in a browser, as far as the host can tell: the event streams, read in their own process.
READER = """
import json, sys, threading
import anyio, httpx
base, token, paths = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
counts = {path: 0 for path in paths}
async def follow(client, path, started):
    async with client.stream("GET", path, headers={"accept": "text/event-stream"}) as response:
        if response.status_code != 200:
            raise SystemExit(f"GET {path} answered {response.status_code}")
        started()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                counts[path] += 1
async def main():
    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=None) as client:
        async with anyio.create_task_group() as tg:
            opened = []
            def started():
                opened.append(1)
                if len(opened) == len(paths):
                    print("open", flush=True)
            for path in paths:
                tg.start_soon(follow, client, path, started)
            await anyio.to_thread.run_sync(sys.stdin.read)
            tg.cancel_scope.cancel()
    print(json.dumps(counts), flush=True)
anyio.run(main)
"""


def config_dir(base: Path, name: str, base_url: str) -> Path:
    profile = profile_yaml("fake:bot: ['*']").replace("context: {engine: plain}", "context: {engine: current}")
    http = "http: {listen: '127.0.0.1:0', metrics: true}\n"
    plugins = f"plugins: {{dashboard: {{token: {TOKEN}}}}}\n"
    host = host_yaml(extra=f"fsync: turn\nruntime_idle_seconds: 3600\n{http}{plugins}")
    return write_config(base / name, profiles={"ana": profile}, models=models_yaml(base_url, 64), host=host)


def client_for(th: TestHost) -> httpx.AsyncClient:
    """A kept-alive client of ``th``'s HTTP server, with the dashboard's token as a bearer."""
    base = th.host.http.base_url
    assert base is not None
    return httpx.AsyncClient(base_url=base, headers={"authorization": f"Bearer {TOKEN}"}, timeout=60)


async def fill(th: TestHost, runtimes: int) -> int:
    """One message in each of ``runtimes`` new chats, answered; the runtimes alive after."""
    bot = th.channel()
    sent = len(bot.sent)
    async with anyio.create_task_group() as tg:
        for index in range(runtimes):
            tg.start_soon(functools.partial(bot.say, "hello", channel_id=f"private:{CHANNELS + index}"))
    with anyio.fail_after(300):
        await bot.wait_sent(sent + runtimes)
    return sum(len(route.runtimes) for route in th.host.routes)


async def timed(client: httpx.AsyncClient, path: str) -> float:
    """Seconds for one GET of ``path`` (a ``SystemExit`` unless it answers 200)."""
    start = time.perf_counter()
    response = await client.get(path)
    elapsed = time.perf_counter() - start
    if response.status_code != 200:
        raise SystemExit(f"GET {path} answered {response.status_code}: {response.text[:300]}")
    return elapsed


async def measure_pages(bench: Bench, full: TestHost, empty: TestHost) -> None:
    runs = bench.runs(quick=3, full=5)
    requests = 20 if bench.quick else 100
    alive = await fill(full, bench.args.runtimes)
    async with client_for(full) as busy, client_for(empty) as idle:
        sizes = {path: len((await busy.get(path)).content) for path in PAGES}  # warm both up
        for path in PAGES:
            await idle.get(path)
        samples: dict[str, tuple[list[float], list[float]]] = {path: ([], []) for path in PAGES}
        for _ in range(runs):
            for path in PAGES:
                samples[path][0].append(statistics.median([await timed(busy, path) for _ in range(requests)]))
                samples[path][1].append(statistics.median([await timed(idle, path) for _ in range(requests)]))
    bench.note(f"{alive:,} runtimes alive; {runs} runs of {requests} requests per path and host")
    bench.note("page sizes with them: " + ", ".join(f"{path} {size:,} B" for path, size in sizes.items()))
    for path in PAGES:
        busy_samples, idle_samples = samples[path]
        bench.add(f"GET {path} with {bench.args.runtimes:,} runtimes alive, p50", "s", busy_samples,
                  baseline="the same on an empty host, p50", baseline_samples=idle_samples,
                  paired=True)  # fmt: skip


def stream_paths(th: TestHost) -> list[str]:
    """The log stream and the conversation stream of each of the chats the turns use."""
    keys = [quote(f"ana/fake:bot/private:{channel}", safe="") for channel in range(CHANNELS)]
    return [LOG_STREAM, *(CONVERSATION_STREAM.format(key=key) for key in keys)]


@contextlib.asynccontextmanager
async def dashboard_open(base_url: str, paths: Sequence[str]) -> AsyncIterator[dict[str, int]]:
    """The event streams of ``paths`` read in another process until the block ends; yields, filled at the
    end, how many events each carried."""
    args = [sys.executable, "-c", READER, base_url, TOKEN, json.dumps(list(paths))]
    counts: dict[str, int] = {}
    async with await anyio.open_process(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        lines = BufferedByteReceiveStream(proc.stdout)
        with anyio.fail_after(60):
            opened = await lines.receive_until(b"\n", 1 << 16)
        if opened.strip() != b"open":
            raise SystemExit("the dashboard's event streams did not open (see the reader's error above)")
        yield counts
        await proc.stdin.aclose()
        with anyio.fail_after(60):
            counts.update(json.loads(await lines.receive_until(b"\n", 1 << 20)))


async def measure_turns(bench: Bench, th: TestHost) -> None:
    runs = bench.runs(quick=3, full=5)
    turns = 200 if bench.quick else bench.args.turns
    for channel in range(CHANNELS):  # spawn the runtimes and warm every path up
        await turn(th, channel)
    base = th.host.http.base_url
    assert base is not None
    paths = stream_paths(th)
    closed: list[float] = []
    watched: list[float] = []
    events: list[int] = []
    for _ in range(runs):
        closed.append(statistics.median([await turn(th, i % CHANNELS) for i in range(turns)]))
        async with dashboard_open(base, paths) as counts:
            watched.append(statistics.median([await turn(th, i % CHANNELS) for i in range(turns)]))
        silent = [path for path in paths if not counts.get(path)]
        if silent:
            raise SystemExit(f"these streams carried no event during {turns} turns: {silent}")
        events.append(sum(counts.values()))
    bench.note(f"{runs} runs of {turns} turns per side over {CHANNELS} chats; {len(paths)} event streams open "
               f"carried {statistics.median(events):,.0f} events a run")  # fmt: skip
    bench.add("turn with the dashboard open and streaming, p50", "s", watched,
              baseline="the same turn with the dashboard closed, p50", baseline_samples=closed, paired=True,
              target="~1")  # fmt: skip


async def measure(bench: Bench) -> None:
    """Start the fake model server in its own process and both hosts in a temporary directory."""
    logging.getLogger().setLevel(logging.INFO)  # as `ishiki run` logs by default: the log page has lines to show
    with fake_model_process() as base_url, tempfile.TemporaryDirectory(dir=bench.args.dir) as base:
        root_full = config_dir(Path(base), "full", base_url)
        root_empty = config_dir(Path(base), "empty", base_url)
        async with (
            TestHost(root_full, plugins=PLUGINS, clock=SystemClock()) as full,
            TestHost(root_empty, plugins=PLUGINS, clock=SystemClock()) as empty,
        ):
            await measure_pages(bench, full, empty)
            await measure_turns(bench, empty)


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--turns", type=int, default=1000, help="turns per run and side (full mode)")
    parser.add_argument("--runtimes", type=int, default=1000, help="runtimes alive on the busy host")
    add_memory_dir_option(parser)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
