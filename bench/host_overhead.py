"""Host overhead per turn: inbound-to-outbound time through the whole host vs one direct gateway call.

The host side is a real ``Host`` (fake channel, a wakeup engine that answers every message, the native
toolcall path, the kernel tools, fact logs with the ``turn`` fsync policy) answering a message in an ongoing
chat; the model answers at once with a ``send_message`` call, so a turn is: dispatch, durable append, wake
decision, turn start, assembly of tools and prompt, the model call, the tool call, the send, the turn's end
(two fsyncs). The timer runs from ``dispatch`` to the send reaching the channel. The baseline sends the same
model request (captured from the host's own turn) straight through ``Gateway.model(ref).generate``. The fake
model server runs in its own process; the context keeps only the current turn, so requests do not grow. Fact
logs go to /dev/shm when it exists (``--dir`` to choose; the disk's fsync is not the host's overhead).
Runs alternate host and gateway (paired); target p50 ratio <= 2.

    .venv/bin/python bench/host_overhead.py [--quick] [--turns N] [--runs N] [--fsync P] [--dir PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _current_turn import CurrentTurnContext, current_turn_profile
from _fake_server import fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run

from ishiki_host.core.clock import SystemClock
from ishiki_host.core.model import ModelRequest
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

CHANNELS = 8


def config_dir(base: Path, base_url: str, fsync: str) -> Path:
    profile = current_turn_profile(profile_yaml("fake:bot: ['*']"))
    host = host_yaml(extra=f"fsync: {fsync}\n")
    return write_config(base / "bot", profiles={"ana": profile}, models=models_yaml(base_url, 64), host=host)


async def measure_host(bench: Bench, base_url: str, base: Path) -> None:
    """Warm up, capture one request, then paired runs of host turns and direct gateway calls."""
    runs = bench.runs(quick=3, full=5)
    turns = 200 if bench.quick else bench.args.turns
    fsync = bench.args.fsync
    bench.note(f"{runs} runs of {turns} turns over {CHANNELS} chats; fsync {fsync}; logs under {base}")
    root = config_dir(base, base_url, fsync)
    plugins = {"ishiki.engine.context.current": CurrentTurnContext}
    async with TestHost(root, plugins=plugins, clock=SystemClock()) as th:
        bot = th.channel()
        captured: list[ModelRequest] = []

        async def turn(channel: int) -> float:
            count = len(bot.sent)
            start = time.perf_counter()
            await bot.say("hello", channel_id=f"private:{channel}")
            await bot.wait_sent(count + 1)
            elapsed = time.perf_counter() - start
            delivery_settled = th.host.routes.get("ana")
            assert delivery_settled is not None
            return elapsed

        for channel in range(CHANNELS):  # spawn the runtimes and warm every path up
            await turn(channel)
            runtime = await th.host.runtime_for("ana", "fake:bot", f"private:{channel}")
            await runtime.settled()
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:0")
        runtime.context.bus.subscribe("turn.step", lambda event: captured.append(event["step"].request))
        await turn(0)
        await runtime.settled()
        model = th.host.gateways.gateway.model("default")

        async def direct() -> float:
            start = time.perf_counter()
            await model.generate(captured[0])
            return time.perf_counter() - start

        async def host_turn(index: int) -> float:
            elapsed = await turn(index % CHANNELS)
            rt = await th.host.runtime_for("ana", "fake:bot", f"private:{index % CHANNELS}")
            await rt.settled()
            return elapsed

        host_p50: list[float] = []
        direct_p50: list[float] = []
        for _ in range(runs):
            host_p50.append(statistics.median([await host_turn(i) for i in range(turns)]))
            direct_p50.append(statistics.median([await direct() for _ in range(turns)]))
    bench.add("inbound-to-outbound turn through the host, p50", "s", host_p50,
              baseline="the same request through Gateway.model(ref).generate, p50", baseline_samples=direct_p50,
              paired=True, target="<= 2")  # fmt: skip


async def measure(bench: Bench) -> None:
    """Start the fake model server in its own process and measure in a temporary config dir."""
    with fake_model_process() as base_url, tempfile.TemporaryDirectory(dir=bench.args.dir) as base:
        await measure_host(bench, base_url, Path(base))


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--turns", type=int, default=1000, help="turns per run (full mode)")
    parser.add_argument("--fsync", choices=["always", "turn", "never"], default="turn")
    add_memory_dir_option(parser)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
