"""``ishiki usage [DIR] [--days N] [--json]``: model calls, tokens and tool calls of a config directory, by
profile, channel, model and tool.

It reads the usage counts of the memory database (``ishiki_host.store.repos.usage``), whether a host runs or
not: a running host writes its counts a few seconds after its turns and all of them when it stops. ``--days N``
sums the last N days of the host's time zone, today included (default 1: today).

Exit status: 0 with the totals (also when nothing was counted yet), 1 when the database cannot be read, 2 when
DIR is not a config directory or ``--days`` is not a number of days from 1 to 366.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ishiki_host.cli._args import add_dir_argument, usable_dir
from ishiki_host.cli._output import print_json, table

if TYPE_CHECKING:
    from ishiki_host.store.repos.usage import CallDimension, UsageSum, UsageTotals

__all__ = ["register", "run"]

MAX_DAYS = 366


def register(subparsers: Any) -> None:
    """Add the ``usage`` command."""
    parser = subparsers.add_parser(
        "usage",
        help="show model calls, tokens and tool calls",
        description="Sum the model calls, tokens and tool calls of DIR's profiles over the last N days of the "
        "host's time zone (default: today), by profile, channel, model and tool.",
    )
    add_dir_argument(parser)
    parser.add_argument("--days", type=_days, default=1, metavar="N", help="the last N days, today included")
    parser.add_argument("--json", action="store_true", help="print the totals as JSON")
    parser.set_defaults(handler=run)


def _days(text: str) -> int:
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"a number of days from 1 to {MAX_DAYS}, not {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    """Print the totals of ``args.dir``; return the exit status."""
    from zoneinfo import ZoneInfo

    import anyio

    from ishiki_host.commands.usage import period_label
    from ishiki_host.config.host import load_host_config
    from ishiki_host.errors import StoreError
    from ishiki_host.store.db import memory_db_path
    from ishiki_host.store.repos.usage import period_days

    root = usable_dir("usage", args.dir)
    if root is None:
        return 2
    host = load_host_config(root)[0]
    first, last = period_days(time.time(), ZoneInfo(host.timezone), args.days)
    label = period_label(args.days, first, last, host.timezone)
    db = memory_db_path(host.data_dir)
    if not db.exists():
        print(f"No usage {label}: nothing was counted yet ({db} does not exist).")
        return 0
    try:
        totals = anyio.run(_read, db, first, last)
    except StoreError as exc:
        print(f"ishiki usage: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print_json(_as_json(totals, host.timezone))
    else:
        print("\n".join(_render(totals, f"Usage {label} in {root}")))
    return 0


async def _read(db: Path, first: str, last: str) -> UsageTotals:
    from ishiki_host.store.memory_store import MemoryStore

    async with await MemoryStore.open(db, check=False) as store:  # a read: the full check is `ishiki check`'s
        return await store.usage.totals(first, last)


def _render(totals: UsageTotals, heading: str) -> list[str]:
    from ishiki_host.commands.usage import channel_name, sum_text

    if not totals.calls and not totals.tools:
        return [f"{heading}: no model or tool calls."]
    lines = [f"{heading}:", f"model calls: {sum_text(totals.total)}"]
    header = ["calls", "failed", "tokens in", "tokens out"]
    dimensions: tuple[CallDimension, ...] = ("profile", "channel", "model")
    for dimension in dimensions:
        rows = totals.calls_by(dimension)
        if rows:
            named = [(channel_name(n) if dimension == "channel" else n or "(no runtime)", s) for n, s in rows]
            lines += ["", *table([[f"by {dimension}", *header], *(_row(n, s) for n, s in named)])]
    tools = totals.tools_by_name()
    if tools:
        lines += ["", *table([["by tool", "calls"], *([name, str(count)] for name, count in tools)])]
    return lines


def _row(name: str, total: UsageSum) -> list[str]:
    return [name, f"{total.calls:,}", f"{total.failures:,}", f"{total.input_tokens:,}", f"{total.output_tokens:,}"]


def _as_json(totals: UsageTotals, zone: str) -> dict[str, Any]:
    def sums(dimension: CallDimension) -> list[dict[str, Any]]:
        return [{"name": name, **_sum_json(total)} for name, total in totals.calls_by(dimension)]

    return {
        "firstDay": totals.first_day,
        "lastDay": totals.last_day,
        "timezone": zone,
        "total": _sum_json(totals.total),
        "byProfile": sums("profile"),
        "byChannel": sums("channel"),
        "byModel": sums("model"),
        "byTool": [{"name": name, "calls": count} for name, count in totals.tools_by_name()],
    }


def _sum_json(total: UsageSum) -> dict[str, int]:
    return {
        "calls": total.calls,
        "failures": total.failures,
        "inputTokens": total.input_tokens,
        "outputTokens": total.output_tokens,
    }
