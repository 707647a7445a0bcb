"""Host overhead per turn: inbound-to-outbound time through the whole host vs one direct gateway call.

The host side is a real ``Host`` (fake channel, a wakeup engine that answers every message, the native
toolcall path, the kernel tools, fact logs with the ``turn`` fsync policy) answering a message in an ongoing
chat; the model answers at once with a ``send_message`` call, so a turn is: dispatch, durable append, wake
decision, turn start, assembly of tools and prompt, the model call, the tool call, the send, the turn's end
(two fsyncs). The timer runs from ``dispatch`` to the send reaching the channel. The baseline sends the same
model request (captured from the host's own turn) straight through ``Gateway.model(ref).generate``. The fake
model server runs in its own process; the context keeps only the current turn, so requests do not grow. Fact
logs go to /dev/shm when it exists (``--dir`` to choose; the disk's fsync is not the host's overhead).
Prints each run's p50s and the median ratio (target <= 2).

    .venv/bin/python bench/host_overhead.py [--quick] [--turns N] [--runs N] [--dir PATH]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio

from ishiki_host.core.clock import SystemClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.hooks import AgentHooks
from ishiki_host.core.model import ModelRequest
from ishiki_host.core.turns import Step
from ishiki_host.plugins.base import ContextEngine
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

SERVER = """
import sys
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall
with FakeOpenAIServer() as server:
    server.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["ok"]}),))
    print(server.base_url, flush=True)
    sys.stdin.read()
"""
CHANNELS = 8


def models(base_url: str) -> str:
    return (
        f"providers:\n  fake:\n    api: openai-completions\n    baseUrl: {base_url}\n    maxConcurrency: 64\n"
        "    models: [{id: fake-model}]\ngroups:\n  default:\n    models: [fake:fake-model]\n"
    )


def _current_turn(newest_first: Iterator[Entry]) -> list[Entry]:
    window: list[Entry] = []
    for entry in newest_first:
        window.append(entry)
        if entry.type == "message" and entry.data.get("role") == "user" and "source" in entry.data:
            break
    window.reverse()
    return window


class _CurrentTurn(AgentHooks):
    async def select_entries(self, log: FactLog, step: Step) -> list[Entry]:
        return await log.read_back(_current_turn)

    def hooks(self) -> AgentHooks:
        return self

    async def instructions(self) -> str | None:
        return None


class CurrentTurnContext(ContextEngine):
    """A context of the current turn only (benchmark requests stay the same size)."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        return _CurrentTurn()


def start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def config_dir(base: Path, base_url: str, fsync: str) -> Path:
    profile = profile_yaml("fake:bot: ['*']").replace("context: {engine: plain}", "context: {engine: current}")
    host = host_yaml(extra=f"fsync: {fsync}\n")
    return write_config(base / "bot", profiles={"ana": profile}, models=models(base_url), host=host)


async def measure(base_url: str, turns: int, runs: int, base: Path, fsync: str) -> float:
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
        runtime.bus.subscribe("turn.step", lambda event: captured.append(event["step"].request))
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

        ratios = []
        for run in range(runs):
            host_times = [await host_turn(i) for i in range(turns)]
            direct_times = [await direct() for _ in range(turns)]
            host_p50, direct_p50 = statistics.median(host_times), statistics.median(direct_times)
            ratios.append(host_p50 / direct_p50)
            print(
                f"run {run + 1}: gateway p50 {direct_p50 * 1e3:6.2f} ms  host turn p50 {host_p50 * 1e3:6.2f} ms"
                f"  ratio {ratios[-1]:.2f}"
            )
    ratio = statistics.median(ratios)
    verdict = "ok" if ratio <= 2 else "ABOVE TARGET"
    print(f"host overhead: p50 ratio {ratio:.2f} (median of {runs} runs of {turns} turns, fsync {fsync}; target <= 2)")
    print(verdict)
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 turns x 3 runs")
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fsync", choices=["always", "turn", "never"], default="turn")
    default_dir = "/dev/shm" if Path("/dev/shm").is_dir() else None
    parser.add_argument("--dir", default=default_dir, help="where the config dir and fact logs go")
    args = parser.parse_args()
    turns, runs = (200, 3) if args.quick else (args.turns, args.runs)
    proc, base_url = start_server()
    try:
        with tempfile.TemporaryDirectory(dir=args.dir) as base:
            anyio.run(measure, base_url, turns, runs, Path(base), args.fsync)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)


if __name__ == "__main__":
    main()
