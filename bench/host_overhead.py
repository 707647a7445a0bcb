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

Issue 26 (memory on vs off): the same turn on three more hosts in the same run, each run of each measured
back to back with the others (paired): the memory extension off; on, with full-text recall; and on with an
embeddings model (the fake server's ``/embeddings``: each turn embeds its search text, recall fuses full text
and vectors). Each memory host starts with ``MEMORIES`` memories its chats may recall, a fifth of them holding
the word the turns say (the embeddings host waits until its backlog has embedded them all). The host of the
first figure runs the default memory extension on an empty store, as it always did.

    .venv/bin/python bench/host_overhead.py [--quick] [--turns N] [--runs N] [--fsync P] [--dir PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from _current_turn import CurrentTurnContext, current_turn_profile
from _fake_server import fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run

from ishiki_host.core.clock import SystemClock
from ishiki_host.core.model import ModelRequest
from ishiki_host.store import MemoryDraft, MemoryStore
from ishiki_host.store.db import memory_db_path
from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

CHANNELS = 8
MEMORIES = 1_000
EMBEDDINGS = "fake:fake-model"
MEMORY = {  # the memory hosts: figure name -> the profile's memory section
    "memory off": "extends:\n  memory: {enable: false}\n",
    "memory on, full text": "",
    "memory on, embeddings": f"extends:\n  memory: {{config: {{embeddings: '{EMBEDDINGS}'}}}}\n",
}
Turn = Callable[[int], Awaitable[float]]


def config_dir(base: Path, base_url: str, fsync: str, extra: str = "", name: str = "bot") -> Path:
    profile = current_turn_profile(profile_yaml("fake:bot: ['*']", extra=extra))
    host = host_yaml(extra=f"fsync: {fsync}\n")
    return write_config(base / name, profiles={"ana": profile}, models=models_yaml(base_url, 64), host=host)


async def prefill(root: Path) -> None:
    """``MEMORIES`` memories of profile ana that the bench's chats may recall, a fifth of them about "hello"."""
    rng = random.Random(26)
    words = ["tea", "garden", "train", "sister", "concert", "recipe", "deadline", "holiday", "bicycle", "novel"]
    drafts = [
        MemoryDraft(
            "fact",
            " ".join(rng.choices(words, k=12)) + (" hello" if index % 5 == 0 else ""),
            "ana",
            f"ana/fake:bot/private:{index % CHANNELS}",
            min_trust="untrusted",
            chats=(f"fake:bot private:{index % CHANNELS}",),
        )
        for index in range(MEMORIES)
    ]
    async with await MemoryStore.open(memory_db_path(root / "data")) as store:
        await store.memories.add_many(drafts)


async def embedded(root: Path) -> None:
    """Until the embeddings host's backlog has embedded every memory (a cap as a last resort)."""
    async with await MemoryStore.open(memory_db_path(root / "data")) as store:
        deadline = time.monotonic() + 300
        while (counts := await store.vectors.counts("ana", EMBEDDINGS)).pending:
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out: the backlog left {counts.pending} memories unembedded")
            await anyio.sleep(0.2)  # (a bench: the backlog has no event to wait on from outside)


async def timed_turn(th: TestHost, channel: int) -> float:
    """One turn in chat ``channel`` of ``th``: the seconds from dispatch to the reply on the channel (the turn
    settled after, outside the time)."""
    bot = th.channel()
    count = len(bot.sent)
    start = time.perf_counter()
    await bot.say("hello", channel_id=f"private:{channel}")
    await bot.wait_sent(count + 1)
    elapsed = time.perf_counter() - start
    runtime = await th.host.runtime_for("ana", "fake:bot", f"private:{channel}")
    await runtime.settled()
    return elapsed


def turner(th: TestHost) -> Turn:
    """``timed_turn`` on ``th``."""
    return functools.partial(timed_turn, th)


async def measure_host(bench: Bench, base_url: str, base: Path) -> None:
    """Warm up, capture one request, then paired runs of host turns, direct gateway calls and the memory hosts."""
    runs = bench.runs(quick=3, full=5)
    turns = 200 if bench.quick else bench.args.turns
    fsync = bench.args.fsync
    bench.note(f"{runs} runs of {turns} turns over {CHANNELS} chats; fsync {fsync}; logs under {base}; "
               f"the memory hosts start with {MEMORIES:,} memories")  # fmt: skip
    root = config_dir(base, base_url, fsync)
    memory_roots = {name: config_dir(base, base_url, fsync, extra, f"memory{index}")
                    for index, (name, extra) in enumerate(MEMORY.items())}  # fmt: skip
    for name, memory_root in memory_roots.items():
        if name != "memory off":
            await prefill(memory_root)
    plugins = {"ishiki.engine.context.current": CurrentTurnContext}
    async with contextlib.AsyncExitStack() as stack:
        th = await stack.enter_async_context(TestHost(root, plugins=plugins, clock=SystemClock()))
        hosts = {name: await stack.enter_async_context(TestHost(memory_root, plugins=plugins, clock=SystemClock()))
                 for name, memory_root in memory_roots.items()}  # fmt: skip
        turn = turner(th)
        memory_turns = {name: turner(host) for name, host in hosts.items()}
        for channel in range(CHANNELS):  # spawn the runtimes and warm every path up
            await turn(channel)
            for other in memory_turns.values():
                await other(channel)
        await embedded(memory_roots["memory on, embeddings"])
        captured: list[ModelRequest] = []
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:0")
        runtime.context.bus.subscribe("turn.step", lambda event: captured.append(event["step"].request))
        await turn(0)
        model = th.host.gateways.gateway.model("default")

        async def direct() -> float:
            start = time.perf_counter()
            await model.generate(captured[0])
            return time.perf_counter() - start

        host_p50: list[float] = []
        direct_p50: list[float] = []
        memory_p50: dict[str, list[float]] = {name: [] for name in MEMORY}
        for _ in range(runs):
            host_p50.append(statistics.median([await turn(i % CHANNELS) for i in range(turns)]))
            direct_p50.append(statistics.median([await direct() for _ in range(turns)]))
            for name, memory_turn in memory_turns.items():
                memory_p50[name].append(statistics.median([await memory_turn(i % CHANNELS) for i in range(turns)]))
    bench.add("inbound-to-outbound turn through the host, p50", "s", host_p50,
              baseline="the same request through Gateway.model(ref).generate, p50", baseline_samples=direct_p50,
              paired=True, target="<= 2")  # fmt: skip
    off = memory_p50["memory off"]
    for name in ("memory on, full text", "memory on, embeddings"):
        bench.add(f"turn through the host, {name}, p50", "s", memory_p50[name],
                  baseline="turn through the host, memory off, p50", baseline_samples=off, paired=True)  # fmt: skip


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
