"""A fleet of 1, 2 and 3 ``ishiki run`` hosts on one PostgreSQL: turns per second, and the takeover after a SIGKILL.

Every host is a real ``ishiki run`` (its own config dir and port, the same ``store`` URL and bot token, fleet
``lease_seconds`` 2 and ``poll_seconds`` 0.2) behind the Telegram package's loopback fake Bot API in webhook
mode, whose load balancer (``proxy`` with several URLs) posts each update to the next host in turn. The fake
model server runs in its own process (50 ms a call, ``max_concurrency`` 64 per host); PostgreSQL is the test
kit's throwaway server with fsync on (``durable``), on this machine's disk, reached on its Unix socket.

- **Throughput.** Each run warms up with one message in each of N chats (each spawns its runtime on the host
  the message landed on: round-robin spreads the runtimes evenly), then measures a second wave, one message in
  each chat again in a shuffled order, from the moment the messages are queued until every chat got its answer.
  Shuffled, because a load balancer does not keep a chat on its host: in the warm-up's order, round-robin would
  land every message on its runtime's owner, where with H hosts about (H-1)/H land elsewhere and go through the
  fleet's inbox to the owner (the share is counted from the inbox's sequence). 1, 2 and 3 hosts run back to
  back in each run (paired), each on a fresh database. The CPU time of each process family during the measured
  wave is noted: the hosts, PostgreSQL (its postmaster and backends), the fake model, and this process (the fake
  Bot API and its load balancer), with the whole machine's (other people's processes share it). So are the
  chats left unanswered (a wave ends once no answer came for 15 s; its rate is the chats answered over the time
  to the last answer), the replies the hosts logged as not sent, the runtimes taken from a live host, and the
  intervals between renewals of each runtime's lease (sampled from ``ishiki_leases``).
- **Takeover.** Two hosts, a few chats warm; the host holding the first chat's lease (``ishiki_leases``) is
  killed (SIGKILL) and taken out of the load balancer, a message for that chat is queued at once, and the time
  until its answer arrives is measured (then the host is started again, and the next repetition kills the
  holder again, by then the other host). Expected: the rest of the lease (renewed every third of it, so 2/3
  to 1 of ``lease_seconds``), a poll, the respawn from the fact log and one turn.

Figures: the rates with 2 and 3 hosts against 1 host (near-linear is the goal, until PostgreSQL or the machine
is the bound: the notes say which), and the takeover time against ``lease_seconds``.

    .venv/bin/python bench/fleet_throughput.py [--quick] [--chats N] [--lease SECONDS] [--runs N] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from _fake_server import fake_model_process
from _fleet import (
    LEASE_SECONDS,
    TOKEN,
    Fleet,
    LeaseWatch,
    children,
    deliver_all,
    inbox_puts,
    leases,
    machine_ticks,
    tree_cpu,
)
from _report import Bench, run
from ishiki_channel_telegram.testing import FakeBotAPI, private_chat, user

from ishiki_host.testing.postgres import PostgresServer

LATENCY = 0.05
CONCURRENCY = 64
HOSTS = (1, 2, 3)
DELIVERIES = 40  # webhook posts in flight at once: Telegram's default max_connections
FIRST_CHAT = 10_000
TAKEOVER_CHATS = 4
STALL = 15.0  # seconds without a new answer that end a wave: several leases and polls, so never a takeover's wait
REFUSED = "the text reply was not sent"  # a host's log line: a reply its runtime was not let send
TAKEN = "taken over: the host that served it stopped renewing"  # a runtime taken from a host (alive, here)


@dataclass
class Answers:
    """What one wave got: seconds from queueing its messages until the last answer came, and how many chats
    were answered (a chat still unanswered after ``STALL`` seconds without any answer counts as lost)."""

    seconds: float
    answered: int


@dataclass
class Wave:
    """One measured wave: its rate, the share of its events that went through the inbox, CPU seconds by family,
    the chats left unanswered, and what the hosts logged about refused replies and leases lost while alive."""

    rate: float
    forwarded: float
    cpu: dict[str, float]
    seconds: float
    lost: int
    refused: int
    taken: int
    window: float  # seconds the CPU was measured over (the wave, and its stall when a chat was lost)
    machine: float  # the share of the whole machine's CPU busy meanwhile, other people's processes included
    longest_renewal: float
    late_renewals: int  # renewals more than 3/4 of the lease after the one before: the runtime could not speak


async def wave(bot: FakeBotAPI, chats: Sequence[int], stall: float = STALL) -> Answers:
    """Queue one message in each chat of ``chats`` and wait until each got an answer, or none came for
    ``stall`` seconds (a reply the fleet dropped never comes: the wave ends, and the chat counts as lost)."""
    seen, wanted = len(bot.sent), set(chats)
    first: dict[int, float] = {}

    def note() -> int:
        nonlocal seen
        now = time.perf_counter()
        for message in bot.sent[seen:]:
            if message.chat_id in wanted:
                first.setdefault(message.chat_id, now)
        seen = len(bot.sent)
        return len(first)

    start = time.perf_counter()
    for chat in chats:
        bot.push_message(private_chat(user(chat, f"P{chat}")), f"hello {chat}")
    await deliver_all(bot, DELIVERIES)
    while (before := note()) < len(wanted):
        try:
            await bot.until(lambda: note() > before, deadline=stall)
        except TimeoutError:
            break
    return Answers(max(first.values(), default=start) - start, len(first))


class CpuMeter:
    """CPU seconds of each process family between ``start`` and ``stop`` (see the module docstring)."""

    def __init__(self, postgres: PostgresServer, model_pids: list[int], fleet: Fleet):
        postmaster = int((postgres.data_dir / "postmaster.pid").read_text("ascii").split()[0])
        self.families = {"hosts": fleet.pids(), "postgres": [postmaster], "model": model_pids}
        self.before: dict[str, dict[int, float]] = {}
        self.own = self.started = 0.0
        self.ticks = (0, 0)
        self.machine = 0.0  # the share of the machine's CPU busy between start and stop (everyone's processes)

    def start(self) -> None:
        """Read every family's CPU time now."""
        self.before = {name: tree_cpu(pids) for name, pids in self.families.items()}
        self.own, self.started, self.ticks = time.process_time(), time.perf_counter(), machine_ticks()

    def stop(self) -> dict[str, float]:
        """CPU seconds each family used since ``start`` (a process started meanwhile counts from 0)."""
        used = {"bench (fake Bot API)": time.process_time() - self.own}
        busy, total = machine_ticks()
        self.machine = (busy - self.ticks[0]) / max(1, total - self.ticks[1])
        for name, pids in self.families.items():
            now, then = tree_cpu(pids), self.before[name]
            used[name] = sum(seconds - then.get(pid, 0.0) for pid, seconds in now.items())
        return used


async def one_wave(postgres: PostgresServer, base: Path, model: tuple[str, list[int]], hosts: int, chats: int,
                   seed: int, lease: float) -> Wave:  # fmt: skip
    """The measured wave of ``hosts`` hosts on a fresh database, after the warm-up wave."""
    url = postgres.create_database(f"fleet_{seed}_{hosts}")
    ids = [FIRST_CHAT + chat for chat in range(chats)]
    async with (
        FakeBotAPI(token=TOKEN) as bot,
        Fleet(base / f"h{hosts}", hosts, bot, url, model[0], CONCURRENCY, lease) as fleet,
    ):
        await wave(bot, ids)  # every chat spawns its runtime, on the host its message landed on
        random.Random(seed).shuffle(ids)
        meter, puts = CpuMeter(postgres, model[1], fleet), inbox_puts(url)
        refused, taken = fleet.logged(REFUSED), fleet.logged(TAKEN)
        watch = LeaseWatch(url)
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch.run)
            meter.start()
            got = await wave(bot, ids, max(STALL, 3 * lease))
            cpu, window = meter.stop(), time.perf_counter() - meter.started
            tg.cancel_scope.cancel()
        forwarded = (inbox_puts(url) - puts) / chats
        refused, taken = fleet.logged(REFUSED) - refused, fleet.logged(TAKEN) - taken
    late = watch.over(lease * 3 / 4)  # past it, a send asks the database first (Fleet.fence)
    return Wave(got.answered / got.seconds, forwarded, cpu, got.seconds, chats - got.answered, refused, taken,
                window, meter.machine, watch.longest(), late)  # fmt: skip


async def takeovers(
    postgres: PostgresServer, base: Path, model_url: str, repetitions: int, lease: float
) -> tuple[list[float], int]:
    """Seconds from a SIGKILL of a runtime's host until that runtime answered a message, each repetition; and
    how many repetitions got no answer at all (no time to report for those)."""
    url = postgres.create_database("takeover")
    ids = [FIRST_CHAT + chat for chat in range(TAKEOVER_CHATS)]
    samples: list[float] = []
    async with (
        FakeBotAPI(token=TOKEN) as bot,
        Fleet(base / "takeover", 2, bot, url, model_url, CONCURRENCY, lease) as fleet,
    ):
        await wave(bot, ids)
        for _ in range(repetitions):
            chat, holder = min(leases(url).items())
            victim = fleet.holder_index(holder)
            await fleet.kill(victim)
            got = await wave(bot, [chat], max(STALL, 3 * lease))
            if got.answered:
                samples.append(got.seconds)
            await fleet.start(victim)
    return samples, repetitions - len(samples)


def describe(hosts: int, waves: list[Wave], chats: int) -> str:
    """A note on one host count: rate, forwarded share, CPU per turn by family, and how busy the machine was."""
    cores = os.cpu_count() or 1
    rate = sorted(w.rate for w in waves)[len(waves) // 2]
    last = waves[-1]
    per_turn = ", ".join(f"{name} {seconds / chats * 1e3:.2f}" for name, seconds in last.cpu.items())
    busy = sum(last.cpu.values()) / (last.window * cores)
    lost, longest = sum(w.lost for w in waves), max(w.longest_renewal for w in waves)
    renewal = f"{longest:.2f} s" if longest else "(no lease renewed twice in the wave)"
    return (
        f"{hosts} host(s): {rate:.0f} turns/s (median), {last.forwarded:.0%} of the events through the inbox; "
        f"CPU ms per turn (last run): {per_turn}; these processes {busy:.0%} of the {cores} cores, "
        f"the whole machine {last.machine:.0%}; "
        f"unanswered chats {lost} of {chats * len(waves)}, replies refused by the hosts "
        f"{sum(w.refused for w in waves)}, runtimes taken from a live host {sum(w.taken for w in waves)}; "
        f"longest interval between two renewals of a lease {renewal}, "
        f"{sum(w.late_renewals for w in waves)} renewals later than 3/4 of the lease"
    )


async def measure(bench: Bench) -> None:
    """Paired runs of 1, 2 and 3 hosts, then the takeover repetitions, on one PostgreSQL and one fake model."""
    runs, repetitions = bench.runs(quick=1, full=3), (3 if bench.quick else 5)
    chats, lease = bench.args.chats or (120 if bench.quick else 300), bench.args.lease
    bench.note(
        f"{runs} runs of {chats} chats; model latency {LATENCY * 1e3:.0f} ms, concurrency {CONCURRENCY} per host; "
        f"lease {lease:g} s, poll 0.2 s; {os.cpu_count()} cores; PostgreSQL with fsync on"
    )
    rates: dict[int, list[Wave]] = {hosts: [] for hosts in HOSTS}
    with PostgresServer(durable=True) as postgres, fake_model_process(LATENCY, text="ok") as model_url:
        model = (model_url, children(os.getpid()))  # the fake model is this process's only child yet
        with tempfile.TemporaryDirectory() as base:
            for index in range(runs):
                for hosts in HOSTS:
                    rates[hosts].append(
                        await one_wave(postgres, Path(base) / str(index), model, hosts, chats, index, lease)
                    )
            took, unanswered = await takeovers(postgres, Path(base), model_url, repetitions, lease)
    for hosts in HOSTS:
        bench.note(describe(hosts, rates[hosts], chats))
    one = [w.rate for w in rates[1]]
    for hosts, target in ((2, ">= 1.8"), (3, ">= 2.7")):
        bench.add(f"turns, {hosts} hosts", "turns/s", [w.rate for w in rates[hosts]], baseline="turns, 1 host",
                  baseline_samples=one, paired=True, direction="higher", target=target)  # fmt: skip
    if not took:
        raise RuntimeError(f"no takeover answered in {repetitions} repetitions")
    bench.add("takeover after SIGKILL, until the answer", "s", took, baseline=f"lease_seconds ({lease:g} s)",
              baseline_samples=[lease] * len(took), direction="lower", target="~1")  # fmt: skip
    times = ", ".join(f"{seconds:.2f} s" for seconds in took)
    bench.note(f"takeovers: {times}; {unanswered} of {repetitions} never answered")


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--chats", type=int, default=0, help="chats per wave (default: 300, --quick 120)")
    parser.add_argument("--lease", type=float, default=LEASE_SECONDS, help="fleet.lease_seconds (default: 2)")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
