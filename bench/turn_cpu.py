"""CPU per tool-using turn through the whole host, against raw pooled httpx making the same two model calls.

A real ``Host`` (fake channel, a wakeup engine that answers every message, native toolcall, the kernel tools, an
extension's ``lookup`` tool, a context of the current turn only so requests keep their size, fact logs with the
``turn`` fsync policy on /dev/shm) answers N conversations at once (32 by default), wave after wave: each
message starts a turn whose model calls ``lookup``, then answers with ``send_message`` (two model calls, two
tool calls, the reply on the channel, the turn closed in the log). The fake model server runs in its own
process and answers after 50 ms. The baseline makes the same two calls per conversation with pooled httpx
clients (small pools, as the gateway's) against the same server: the host's own two request bodies of a turn
(captured from its ``turn.step`` events, encoded as the gateway encodes them), each POSTed and its JSON answer
parsed.

The figure is the process CPU (every thread: fsyncs run off the loop) per turn against the baseline's per pair
of calls; the event loop thread's CPU is reported the same way, and the part of it spent in the garbage
collector (``gc.callbacks``). Runs alternate host and baseline (paired).

    .venv/bin/python bench/turn_cpu.py [--quick] [--conversations N] [--waves N] [--side S] [--runs N] [--dir PATH]
        [--json PATH]

``--side host`` (or ``raw``) runs that side alone after the warm-up: under ``valgrind --tool=cachegrind
--cache-sim=no`` the difference between two ``--waves`` counts, divided by the turns between, is the
instructions per turn, a measure that does not swing with what else the machine runs.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
from _current_turn import CurrentTurnContext, current_turn_profile
from _fake_server import TOOL_THEN_SEND, fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run

from ishiki_host import Extension, Tool, hookimpl
from ishiki_host.config.models import ModelSpec
from ishiki_host.core.clock import SystemClock
from ishiki_host.core.model import ModelRequest
from ishiki_host.gateway.pools import POOL_SIZE
from ishiki_host.gateway.providers.openai import encode_request
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

LATENCY = 0.05
KEY = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}


class Lookup(Extension):
    """One tool, ``lookup``, answering at once (the tool the model calls before it answers)."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        async def lookup(args: Mapping[str, Any], tool_ctx: Any) -> str:
            return f"{args['key']} = 42"

        tools = [Tool("lookup", "Look a key up.", lookup, KEY, trust="untrusted")]

        class Instance:
            @hookimpl
            def ishiki_tools(self) -> list[Tool]:
                return tools

        return Instance()


PLUGINS = {"ishiki.engine.context.current": CurrentTurnContext, "ishiki.ext.lookup": Lookup}


class Meter:
    """Process and current-thread CPU seconds over a block, and the thread's CPU in the collector."""

    def __init__(self) -> None:
        self.gc = self._gc_start = 0.0

    def _collecting(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.thread_time()
        else:
            self.gc += time.thread_time() - self._gc_start

    def __enter__(self) -> Meter:
        gc.callbacks.append(self._collecting)
        self._process, self._thread = time.process_time(), time.thread_time()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.process = time.process_time() - self._process
        self.thread = time.thread_time() - self._thread
        gc.callbacks.remove(self._collecting)


async def waves(conversation: Callable[[int], Awaitable[object]], conversations: int, count: int) -> None:
    """``count`` waves of ``conversations`` concurrent conversations, one after the other."""
    for _ in range(count):
        async with anyio.create_task_group() as tg:
            for index in range(conversations):
                tg.start_soon(conversation, index)


class HostSide:
    """The host's turns: one message per conversation per wave, each answered by a two-call turn."""

    def __init__(self, th: TestHost):
        self.th = th
        self.bot = th.channel()

    async def turn(self, index: int) -> None:
        """One message to conversation ``index``, until its turn has ended (replied and closed in the log)."""
        delivery = await self.bot.say("hello", channel_id=f"private:{index}")
        with anyio.fail_after(60):
            await delivery.settled()

    async def capture(self) -> list[ModelRequest]:
        """Spawn conversation 0's runtime and return the two model requests of one of its turns."""
        await self.turn(0)
        runtime = await self.th.host.runtime_for("ana", "fake:bot", "private:0")
        captured: list[ModelRequest] = []
        dispose = runtime.context.bus.subscribe("turn.step", lambda event: captured.append(event["step"].request))
        await self.turn(0)
        dispose()
        if len(captured) != 2:
            raise SystemExit(f"a turn made {len(captured)} model calls, not the two (lookup, send_message) expected")
        return captured


def raw_clients(conversations: int) -> list[httpx.AsyncClient]:
    """Pooled clients of ``POOL_SIZE`` keep-alive connections each, enough for ``conversations`` at once.

    Small pools, as the gateway uses: httpcore scans a pool's every connection per request, so one client of 32
    connections costs about three times the CPU per call (4.5 ms against 1.5 ms a pair of calls, measured here).
    """
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=POOL_SIZE)
    return [httpx.AsyncClient(limits=limits) for _ in range(-(-conversations // POOL_SIZE))]


class RawSide:
    """The same two calls per conversation, conversation ``i`` on client ``i % len(clients)``."""

    def __init__(self, clients: list[httpx.AsyncClient], url: str, bodies: list[dict[str, Any]]):
        self.clients, self.url, self.bodies = clients, url, bodies

    async def turn(self, index: int) -> None:
        """POST the turn's two bodies one after the other, parsing each JSON answer."""
        client = self.clients[index % len(self.clients)]
        for body in self.bodies:
            response = await client.post(self.url, json=body)
            response.raise_for_status()
            response.json()


async def metered(side: HostSide | RawSide, conversations: int, count: int) -> Meter:
    """The CPU ``count`` waves of ``side`` took."""
    with Meter() as meter:
        await waves(side.turn, conversations, count)
    return meter


async def measure_in(bench: Bench, base_url: str, base: Path) -> None:
    """Warm both sides, then paired runs, their order alternating."""
    runs = bench.runs(quick=3, full=5)
    conversations = bench.args.conversations
    count = bench.args.waves or (8 if bench.quick else 30)
    turns = conversations * count
    bench.note(f"{runs} runs of {count} waves of {conversations} conversations; model latency {LATENCY * 1e3:.0f} ms")
    profile = current_turn_profile(profile_yaml(extra="extends: {lookup: {}}\n"))
    root = write_config(base / "bot", profiles={"ana": profile}, models=models_yaml(base_url, 4 * conversations),
                        host=host_yaml(extra="fsync: turn\n"))  # fmt: skip
    async with TestHost(root, plugins=PLUGINS, clock=SystemClock()) as th, AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(client) for client in raw_clients(conversations)]
        host = HostSide(th)
        spec = ModelSpec("fake-model")
        bodies = [encode_request(spec, request, stream=False, options={}) for request in await host.capture()]
        raw = RawSide(clients, f"{base_url}/chat/completions", bodies)
        await metered(host, conversations, 2)  # spawn every runtime, warm both paths
        await metered(raw, conversations, 2)
        if bench.args.side != "both":
            alone = host if bench.args.side == "host" else raw
            samples = [(await metered(alone, conversations, count)).process / turns for _ in range(runs)]
            bench.add(f"CPU per turn, {bench.args.side} side alone", "s", samples, notes="--side: no baseline")
            return
        host_runs: list[Meter] = []
        raw_runs: list[Meter] = []
        for number in range(runs):
            sides = [(host, host_runs), (raw, raw_runs)]
            for side, into in sides if number % 2 == 0 else reversed(sides):
                into.append(await metered(side, conversations, count))
    bench.add("CPU per tool-using turn through the host", "s", [m.process / turns for m in host_runs],
              baseline="CPU per two calls, raw pooled httpx", baseline_samples=[m.process / turns for m in raw_runs],
              paired=True, target="<= 2", notes="process CPU, every thread")  # fmt: skip
    bench.add("event-loop CPU per tool-using turn", "s", [m.thread / turns for m in host_runs],
              baseline="event-loop CPU per two calls, raw pooled httpx",
              baseline_samples=[m.thread / turns for m in raw_runs], paired=True)  # fmt: skip
    bench.add("garbage collection per tool-using turn", "s", [m.gc / turns for m in host_runs],
              baseline="event-loop CPU per tool-using turn", baseline_samples=[m.thread / turns for m in host_runs],
              paired=True)  # fmt: skip


async def measure(bench: Bench) -> None:
    """Start the fake model server in its own process; measure in a temporary config dir."""
    with (
        fake_model_process(LATENCY, reply=TOOL_THEN_SEND) as base_url,
        tempfile.TemporaryDirectory(dir=bench.args.dir) as base,
    ):
        await measure_in(bench, base_url, Path(base))


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--conversations", type=int, default=32, help="conversations at once (default 32)")
    parser.add_argument("--waves", type=int, help="waves per run (default 30; 8 with --quick)")
    parser.add_argument(
        "--side",
        choices=["both", "host", "raw"],
        default="both",
        help="run one side alone after the warm-up (for an instruction count under cachegrind; default both)",
    )
    add_memory_dir_option(parser)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
