"""``scheduler.across_workers``: ``lease`` against ``split``, with ``ishiki run --workers 2`` on Telegram.

A real ``ishiki run --workers 2`` (a supervisor and two worker processes) polls the package's loopback fake Bot
API (in this process) and answers every direct message with one call to the fake model server (its own process;
400 ms a call), whose provider has a small ``max_concurrency`` (8), so the limit is what bounds the rate, not
the machine: the ideal is 8 / 0.4 s = 20 turns per second. The summarizer is off (one call per turn). Two
loads:

- **even**: the chats spread over both workers by the hash of their keys, as they come;
- **skewed**: every chat is one that worker 0 owns (a busy group, or a few busy chats that hash alike). A split
  gives worker 0 half the limit, so it runs at half the ideal while worker 1 idles; a lease lets it use all.

Each run, for each load and mode in fresh config dirs (the two modes back to back: paired), warms up with one
message in each chat (every message spawns its runtime), then times a second wave, one message in each chat
again, from the moment they are queued until every chat got its answer. The supervisor's CPU time (user and
system, from ``/proc``) over that wave, per turn, shows what leasing costs it: three small messages per call,
and a slot of its scheduler. That cost alone, without the host around it: 4,000 leases, 8 at a time, over a
real Unix socket between this process (the supervisor's end, ``LeaseLink``) and a worker's end in a process of
its own (``LeaseClient``), the CPU seconds of each end per lease against those of a slot of the ``Scheduler``
alone (what a call pays with ``split``).

    .venv/bin/python bench/workers_concurrency.py [--quick] [--chats N] [--runs N] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
from _fake_server import fake_model_process
from _report import Bench, run
from _workers import TOKEN, push_hello, running_host, write_config
from ishiki_channel_telegram.testing import FakeBotAPI

from ishiki_host.config.models import ModelsConfig, ModelSpec, ProviderConfig
from ishiki_host.core.clock import SystemClock
from ishiki_host.gateway.scheduler import Scheduler
from ishiki_host.workers.leases import LeaseLink
from ishiki_host.workers.owners import HashOwners
from ishiki_host.workers.peer import Peer

LATENCY = 0.4
CONCURRENCY = 8
FIRST_CHAT = 10_000
MODES = ("split", "lease")
TICKS = os.sysconf("SC_CLK_TCK")
LEASES = 4000  # a run of the leases' own cost, 8 at a time


@dataclass(frozen=True)
class Wave:
    """One measured wave: its rate, and the supervisor's CPU seconds per turn over it."""

    rate: float
    cpu_per_turn: float


def chats_for(load: str, count: int) -> list[int]:
    """``count`` chat ids: the first ones (even), or the first ones whose runtime worker 0 owns (skewed)."""
    owners = HashOwners(2)
    bot = TOKEN.split(":")[0]
    chats = (c for c in range(FIRST_CHAT, FIRST_CHAT + 100 * count)
             if load == "even" or owners.owner(f"ana/telegram:{bot}/private:{c}") == 0)  # fmt: skip
    return [next(chats) for _ in range(count)]


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` alone (not its children), from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def configure(root: Path, mode: str) -> None:
    """The bench's config dir with ``across_workers`` set and the summarizer off."""
    with (root / "ishiki.yaml").open("a", encoding="utf-8") as host:
        host.write(f"scheduler:\n  across_workers: {mode}\n")
    with (root / "profiles/ana/profile.yml").open("a", encoding="utf-8") as profile:
        profile.write("session: {summarizer: off}\n")


async def one_wave(base: Path, model_url: str, mode: str, chats: list[int]) -> Wave:
    """The measured wave of ``chats`` on a fresh ``ishiki run --workers 2`` in ``mode``."""
    async with FakeBotAPI(token=TOKEN) as bot:
        root = write_config(base / mode, bot, model_url, CONCURRENCY)
        configure(root, mode)
        async with running_host(root, 2) as process:

            async def wave() -> tuple[float, float]:
                sent = len(bot.sent)
                cpu = cpu_seconds(process.pid)
                start = time.perf_counter()
                for chat in chats:
                    push_hello(bot, chat)
                await bot.until(lambda: len(bot.sent) >= sent + len(chats), deadline=600)
                return time.perf_counter() - start, cpu_seconds(process.pid) - cpu

            await wave()  # every chat spawns its runtime
            seconds, cpu = await wave()
            return Wave(len(chats) / seconds, cpu / len(chats))


@dataclass(frozen=True)
class _Gateway:
    """The supervisor's gateway as its leases see it."""

    scheduler: Scheduler
    config: ModelsConfig


WORKER = """
import sys, time, anyio
from ishiki_host.workers.leases import LeaseClient
from ishiki_host.workers.peer import Peer

async def main(path, count, width):
    stream = await anyio.connect_unix(path)
    clients = []

    async def granted(params):
        return await clients[0].granted(params)

    peer = Peer(stream, {"slot.granted": granted}, label="supervisor")
    clients.append(LeaseClient(peer))

    async def calls(n):
        for _ in range(n):
            async with clients[0].slot("p", 8, "interactive"):
                pass

    async with anyio.create_task_group() as tg:
        await tg.start(peer.run)
        start = time.process_time()
        async with anyio.create_task_group() as each:
            for _ in range(width):
                each.start_soon(calls, count // width)
        print(time.process_time() - start, flush=True)
        await stream.send_eof()
        await peer.wait_closed()

anyio.run(main, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
"""
"""A worker's end in its own process: ``count`` leases, ``width`` at a time; prints its CPU seconds."""


async def lease_cpu(count: int, width: int) -> tuple[float, float]:
    """CPU seconds a lease of the supervisor's end (here) and of the worker's (its own process), ``width`` at a
    time over a real Unix socket."""
    provider = ProviderConfig(id="p", api="openai-completions", models=(ModelSpec("m"),), max_concurrency=8)
    gateway = _Gateway(Scheduler(SystemClock()), ModelsConfig(providers={"p": provider}))
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/leases.sock"
        listener = await anyio.create_unix_listener(path)
        argv = [sys.executable, "-c", WORKER, path, str(count), str(width)]
        async with listener, await anyio.open_process(argv, stderr=None) as process:
            stream = await listener.accept()
            start = time.process_time()
            link = LeaseLink(lambda: gateway)
            peer = Peer(stream, link.handlers(), label="worker")
            async with anyio.create_task_group() as tg:
                tg.start_soon(link.serve, peer)
                await peer.run()  # until the worker is done and closes its end
                tg.cancel_scope.cancel()
            supervisor = time.process_time() - start
            assert process.stdout is not None
            worker = float((await process.stdout.receive()).decode())
            await process.wait()
    return supervisor / count, worker / count


async def scheduler_cpu(count: int, width: int) -> float:
    """CPU seconds a slot of the ``Scheduler`` alone, ``width`` at a time (what a process's own calls pay)."""
    scheduler = Scheduler(SystemClock())

    async def calls(n: int) -> None:
        for _ in range(n):
            async with scheduler.slot("p", 8, "interactive"):
                await anyio.lowlevel.checkpoint()

    start = time.process_time()
    async with anyio.create_task_group() as tg:
        for _ in range(width):
            tg.start_soon(calls, count // width)
    return (time.process_time() - start) / count


async def measure(bench: Bench) -> None:
    """Paired runs: split, then lease, for each load, in fresh config dirs, against one fake model process."""
    runs = bench.runs(quick=1, full=3)
    count = bench.args.chats or (48 if bench.quick else 120)
    bench.note(
        f"{runs} runs of {count} chats per load; model latency {LATENCY * 1e3:.0f} ms, max_concurrency "
        f"{CONCURRENCY} (ideal {CONCURRENCY / LATENCY:.0f} turns/s); 2 workers; {os.cpu_count()} cores"
    )
    waves: dict[tuple[str, str], list[Wave]] = {(load, mode): [] for load in ("even", "skewed") for mode in MODES}
    with fake_model_process(LATENCY) as model_url:
        for index in range(runs):
            for load in ("even", "skewed"):
                chats = chats_for(load, count)
                with tempfile.TemporaryDirectory() as base:
                    for mode in MODES:
                        waves[(load, mode)].append(await one_wave(Path(base), model_url, mode, chats))
                split, lease = waves[(load, "split")][-1], waves[(load, "lease")][-1]
                bench.note(
                    f"run {index + 1}, {load}: {split.rate:.1f} turns/s split, {lease.rate:.1f} lease; supervisor "
                    f"{split.cpu_per_turn * 1e3:.2f} ms CPU a turn split, {lease.cpu_per_turn * 1e3:.2f} lease"
                )
    ideal = [CONCURRENCY / LATENCY] * runs
    for load, target in (("even", ">= 0.9"), ("skewed", ">= 1.6")):
        lease, split = waves[(load, "lease")], waves[(load, "split")]
        bench.add(f"turns, {load}, lease", "turns/s", [w.rate for w in lease], baseline=f"turns, {load}, split",
                  baseline_samples=[w.rate for w in split], paired=True, direction="higher", target=target)  # fmt: skip
        for mode, samples in (("lease", lease), ("split", split)):
            bench.add(f"turns, {load}, {mode}", "turns/s", [w.rate for w in samples], baseline="ideal 8 / 0.4 s",
                      baseline_samples=ideal, paired=True, direction="higher")  # fmt: skip
        bench.add(f"supervisor CPU a turn, {load}, lease", "s", [w.cpu_per_turn for w in lease],
                  baseline=f"supervisor CPU a turn, {load}, split", baseline_samples=[w.cpu_per_turn for w in split],
                  paired=True, direction="lower")  # fmt: skip
    supervisor, worker, alone = [], [], []
    for _ in range(bench.runs(quick=3, full=7)):
        ends = await lease_cpu(LEASES, 8)
        supervisor.append(ends[0])
        worker.append(ends[1])
        alone.append(await scheduler_cpu(LEASES, 8))
    for end, samples in (("supervisor", supervisor), ("worker", worker)):
        bench.add(f"{end} CPU a lease", "s", samples, baseline="CPU a slot of the Scheduler alone",
                  baseline_samples=alone, paired=True)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--chats", type=int, default=None, help="chats per load (default 120, 48 with --quick)")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
