"""Crash consistency: ``ishiki run`` on Telegram (or WhatsApp), SIGKILLed at seeded moments while it answers chats.

The harness of ``bench/_crash.py`` (also run by ``tests/reliability/test_crash_consistency.py``): 500 messages
across 50 chats (10 of them groups), 24 SIGKILLs at points drawn as counts of observed events (model requests,
messages sent, updates confirmed), a torn tail written after every third kill, then a clean stop and one more
start. Each run uses the next seed. Reports, per run: how many checked properties failed, duplicate inbound
entries (a redelivered update recorded again), direct messages left unanswered because a kill cut their send
in flight (at most once), and how long a host takes to poll Telegram again after a SIGKILL, against the same
after a clean stop. ``--quick``: 100 messages, 20 chats, 6 kills. ``--platform whatsapp`` runs the bot on
WhatsApp's Cloud API instead (its webhooks posted until answered 200; no groups; "polls" is then the
phone-number check a host makes at start); ``--platform onebot`` on QQ over OneBot v11 in http mode (the fake
implementation's event posts repeated until answered 204; "polls" is then its ``get_login_info`` at start).

    .venv/bin/python bench/crash_consistency.py [--quick] [--runs N] [--seed N] [--platform P] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from _crash import CrashPlan, CrashReport, CrashRun
from _crash_platforms import PLATFORMS
from _report import Bench, run

ISHIKI = Path(sys.executable).with_name("ishiki")


def plan_for(bench: Bench, seed: int) -> CrashPlan:
    """The full plan, or the quick one."""
    platform = bench.args.platform
    if bench.quick:
        return CrashPlan(seed=seed, messages=100, chats=20, groups=4, kills=6, platform=platform)
    return CrashPlan(seed=seed, platform=platform)


async def measure(bench: Bench) -> None:
    """One harness run per seed."""
    runs = bench.runs(quick=1, full=1)
    reports: list[CrashReport] = []
    for index in range(runs):
        with tempfile.TemporaryDirectory(prefix="ishiki-crash-") as work:
            report = await CrashRun(plan_for(bench, bench.args.seed + index), Path(work), ISHIKI).run()
        reports.append(report)
        for line in report.lines():
            bench.note(line)
    plan = reports[0].plan
    bench.note(f"{runs} run(s) of {plan.messages} messages, {plan.chats} chats, {plan.kills} kills")
    after_kill = [statistics.median(_ready(r, killed=True)) for r in reports]
    after_stop = [statistics.median(_ready(r, killed=False)) for r in reports]
    starts = {"telegram": "first getUpdates", "onebot": "its get_login_info"}
    first = starts.get(plan.platform, "its phone-number check")
    bench.add(f"host listens again after a SIGKILL (start to {first})", "s", after_kill,
              baseline="the same after a clean stop", baseline_samples=after_stop, paired=True,
              target="~1")  # fmt: skip
    bench.add("checked properties that failed", "properties", [len(r.failed()) for r in reports], target="<= 0")
    bench.add("inbound entries recorded twice", "entries", [sum(r.duplicates.values()) for r in reports],
              target="<= 0")  # fmt: skip
    bench.add("direct messages unanswered after a kill cut their send", "messages", [r.cut_sends for r in reports])


def _ready(report: CrashReport, *, killed: bool) -> list[float]:
    lives = [life for life in report.lives if (life.trigger.split()[0] not in ("final", "restart")) == killed]
    return [life.ready for life in lives if life.ready is not None] or [float("nan")]


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--seed", type=int, default=1, help="the seed of the first run (the next runs add 1)")
    parser.add_argument("--platform", choices=sorted(PLATFORMS), default="telegram", help="the bot's platform")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
