"""Live chats: CPU per turn with 500 and 4,000 live chats, and the live chats a host takes under ``ulimit -n 1024``.

Each measure runs in a child process of its own (a fresh heap), a real ``Host`` (``TestHost``: the fake channel,
a wakeup engine that answers every message, the host's clock faked so no runtime is cooled or evicted for
idleness) on the instant fake model, which runs in a process of its own. As ``ishiki run`` does, the child
freezes the start-up heap once the host has started (``freeze_startup_heap``, where the tree has it).

- CPU per turn: ``--many`` (or ``--few``) chats get one message each, 250 at a time (their runtimes stay alive,
  idle), then seeded random chats among them get ``--turns`` more messages, 16 chats at a time; the child's CPU
  time (``time.process_time``; the model's CPU is in its own process) and the garbage collector's CPU time
  (``gc.callbacks``) over those turns, per turn, at 4,000 live chats against 500. Also the collector's time
  while the chats arrived, per chat. Whether a full collection (a walk of every tracked object: about 2 s at
  4,000 live chats on a loaded 2-core machine) falls inside the measured turns decides much of a short run:
  what the arrival left pending is collected once it reaches a quarter of the old generation.
- Under ``ulimit -n 1024`` (set in the child with ``setrlimit`` before it starts, soft and hard): 1,500 new
  chats, 100 at a time; how many messages the host did not take (dispatch raised) and how many runtimes it
  stopped to stay under the limit.

``--against PATH`` runs the same children on another tree of the host (a ``git worktree`` of the commit before
a change: its ``ishiki_host`` is put first on ``PYTHONPATH``) in the same run, and reports it beside.

    .venv/bin/python bench/live_chats.py [--quick] [--few N] [--many N] [--turns N] [--against PATH] [--dir PATH]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from _fake_server import fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run

HERE = Path(__file__).resolve().parent
WAVE = 250  # new chats at once while the live chats are made
IN_FLIGHT = 16  # measured turns at once
FILES_LIMIT = 1024
FILES_CHATS = 1500
FILES_WAVE = 100


def _freeze() -> None:
    """What ``ishiki run`` does once its host has started, in a tree that does it."""
    try:
        from ishiki_host.host.collector import freeze_startup_heap
    except ImportError:
        return
    freeze_startup_heap()


class GcTimer:
    """The garbage collector's time, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.process_time()
        else:
            self.seconds += time.process_time() - self._began
            self.full += info["generation"] == 2

    def __enter__(self) -> GcTimer:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        gc.callbacks.remove(self)


async def _child(mode: str, chats: int, turns: int, base_url: str, folder: str) -> dict[str, Any]:
    from ishiki_host.core.clock import FakeClock
    from ishiki_host.testing.host import TestHost, host_yaml, profile_yaml, write_config

    host = host_yaml(extra="runtime_idle_seconds: 86400\n")
    models = models_yaml(base_url, 64)
    root = write_config(
        Path(tempfile.mkdtemp(dir=folder)) / "bot", profiles={"ana": profile_yaml()}, models=models, host=host
    )
    async with TestHost(root, clock=FakeClock()) as th:
        _freeze()
        bot = th.channel()
        if mode == "files":
            return await _files(th, bot)
        arrival = GcTimer()
        with arrival:
            await _say_each(bot, range(chats), WAVE)
        rng = random.Random(1)
        await _turns(bot, rng, chats, turns // 4)  # warm-up
        timer = GcTimer()
        with timer:
            cpu = time.process_time()
            await _turns(bot, rng, chats, turns)
            cpu = time.process_time() - cpu
        return {
            "cpu": cpu / turns,
            "gc": timer.seconds / turns,
            "full": timer.full,
            "tracked": len(gc.get_objects()),
            "arrival_gc": arrival.seconds / chats,
        }


async def _say_each(bot: Any, channels: range, wave: int) -> list[int]:
    """One message in each of ``channels``, ``wave`` at a time, each answered; the chats whose message was not
    taken."""
    refused: list[int] = []
    for first in range(channels.start, channels.stop, wave):
        bot.sent.clear()
        batch = range(first, min(first + wave, channels.stop))
        before = len(refused)
        async with anyio.create_task_group() as tg:
            for index in batch:
                tg.start_soon(_say_noting, bot, index, refused)
        with anyio.fail_after(300):
            await bot.wait_sent(len(batch) - (len(refused) - before))
    return refused


async def _say_noting(bot: Any, index: int, refused: list[int]) -> None:
    try:
        await bot.say("hello", channel_id=f"private:{index}")
    except Exception:
        refused.append(index)


async def _turns(bot: Any, rng: random.Random, chats: int, turns: int) -> None:
    """``turns`` messages to random chats of the first ``chats``, ``IN_FLIGHT`` chats at a time, each answered."""
    for first in range(0, turns, IN_FLIGHT):
        bot.sent.clear()
        batch = rng.sample(range(chats), min(IN_FLIGHT, turns - first))
        async with anyio.create_task_group() as tg:
            for index in batch:
                tg.start_soon(lambda i=index: bot.say("again", channel_id=f"private:{i}"))
        with anyio.fail_after(60):
            await bot.wait_sent(len(batch))


async def _files(th: Any, bot: Any) -> dict[str, Any]:
    refused = await _say_each(bot, range(FILES_CHATS), FILES_WAVE)
    budget = getattr(th.host, "budget", None)
    first = min(refused) + 1 if refused else None
    return {"failed": len(refused), "first": first, "evicted": budget.evicted if budget is not None else 0}


def _run_child(args: list[str], tree: str | None, limit: int | None = None) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = tree

    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    done = subprocess.run([sys.executable, str(HERE / "live_chats.py"), "--child", *args], env=env, cwd="/tmp",
                          preexec_fn=limited, capture_output=True, text=True, timeout=1800, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the child {args} failed ({done.returncode}): {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(bench: Bench) -> None:
    """Run the children (see the module docstring) and report."""
    args = bench.args
    turns = 400 if bench.quick else args.turns
    runs = bench.runs(1, 3)
    trees: list[tuple[str, str | None]] = [("", None)]
    if args.against:
        trees.append((" (before)", str(Path(args.against).resolve())))
    with fake_model_process() as base_url, tempfile.TemporaryDirectory(dir=args.dir) as folder:
        for label, tree in trees:
            cpu = _child_runs(runs, lambda chats: ["cpu", str(chats), str(turns), base_url, folder], tree, args)
            few, many = cpu[args.few], cpu[args.many]
            for what, unit in (("cpu", "s"), ("gc", "s")):
                name = f"{'CPU' if what == 'cpu' else 'GC'} per turn, {args.many:,} live chats{label}"
                target = "<= 1.2" if what == "cpu" else None
                bench.add(name, unit, [r[what] for r in many], baseline=f"{args.few:,} live chats",
                          baseline_samples=[r[what] for r in few], target=target)  # fmt: skip
            arrival = [r["arrival_gc"] for r in many], [r["arrival_gc"] for r in few]
            bench.add(f"GC per new chat while {args.many:,} arrive{label}", "s", arrival[0],
                      baseline=f"while {args.few:,} arrive", baseline_samples=arrival[1])  # fmt: skip
            bench.note(f"{label or 'this tree'}: full collections while measured "
                       f"{[r['full'] for r in few]} at {args.few:,}, {[r['full'] for r in many]} at {args.many:,}; "
                       f"objects tracked {many[0]['tracked']:,} at {args.many:,}")  # fmt: skip
            files = _run_child(["files", "0", "0", base_url, folder], tree, FILES_LIMIT)
            bench.add(f"messages not taken of {FILES_CHATS:,} new chats at ulimit -n {FILES_LIMIT}{label}", "",
                      [files["failed"]], target="<= 0")  # fmt: skip
            first = f"the first at chat {files['first']:,}" if files.get("first") else "none"
            bench.note(f"{label or 'this tree'} at ulimit -n {FILES_LIMIT}: {files['failed']:,} messages not taken "
                       f"({first}); {files['evicted']:,} idle runtimes stopped to stay under the limit")  # fmt: skip


def _child_runs(
    runs: int, make: Callable[[int], list[str]], tree: str | None, args: argparse.Namespace
) -> dict[int, list[dict[str, Any]]]:
    """``runs`` children at each of ``--few`` and ``--many`` chats, alternating."""
    results: dict[int, list[dict[str, Any]]] = {args.few: [], args.many: []}
    for _ in range(runs):
        for chats in (args.few, args.many):
            results[chats].append(_run_child(make(chats), tree))
    return results


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--few", type=int, default=500, help="live chats of the baseline")
    parser.add_argument("--many", type=int, default=4000, help="live chats measured against it")
    parser.add_argument("--turns", type=int, default=2000, help="turns measured per child")
    parser.add_argument("--against", metavar="PATH", help="another tree of the host to run the same children on")
    add_memory_dir_option(parser)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, or one child (``--child MODE CHATS TURNS URL DIR``, which prints its JSON)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        mode, chats, turns, base_url, folder = argv[1:6]
        from ishiki_host import eventloop

        result = eventloop.run(_child, mode, int(chats), int(turns), base_url, folder)
        print(json.dumps(result))
        return 0
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
