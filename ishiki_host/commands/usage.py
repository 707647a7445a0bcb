"""``/usage [today|N days]``: the profile's model calls, tokens and tool calls, by channel, model and tool.

The counts are the host's (``ishiki_host.store.repos.usage``): every model call made for the profile's
runtimes (turns, summaries, judges) and every tool call of its turns. "today" and "N days" are days of the
host's time zone (``timezone`` of ishiki.yaml); ``N days`` ends with today. ``ishiki usage DIR`` shows every
profile's from the command line (``parse_days`` and ``channel_name`` are shared with it).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from ishiki_host.errors import CommandError
from ishiki_host.store.repos.usage import period_days

if TYPE_CHECKING:
    from ishiki_host.plugins.commands import CommandContext
    from ishiki_host.store.repos.usage import CallDimension, UsageSum, UsageTotals

__all__ = ["MAX_DAYS", "channel_name", "parse_days", "period_label", "render_lines", "sum_text", "usage_command"]

MAX_DAYS = 366
_DAYS = re.compile(r"(\d+)\s*(?:d|days?)?", re.IGNORECASE)


def parse_days(text: str) -> int:
    """How many days ``today``, ``7 days``, ``7d`` or ``7`` mean (an empty text: today); ``CommandError``
    naming what is allowed for anything else, 0 days and more than ``MAX_DAYS``."""
    words = " ".join(text.split()).lower()
    if words in ("", "today"):
        return 1
    match = _DAYS.fullmatch(words)
    days = int(match.group(1)) if match else 0
    if not 1 <= days <= MAX_DAYS:
        raise CommandError(f"Say /usage today or /usage N days with N from 1 to {MAX_DAYS}, not {text.strip()!r}.")
    return days


def period_label(days: int, first: str, last: str, zone: str) -> str:
    """``today (2025-03-01, UTC)`` or ``the last 7 days (2025-02-23 to 2025-03-01, UTC)``."""
    if days == 1:
        return f"today ({last}, {zone})"
    return f"the last {days} days ({first} to {last}, {zone})"


def channel_name(channel: str) -> str:
    """A stored channel as shown: ``platform:selfId``, or ``(cross mode)`` for the empty one."""
    return channel or "(cross mode)"


def sum_text(total: UsageSum) -> str:
    """``12 calls (1 failed), 1,234 tokens in, 56 out``."""
    failed = f" ({total.failures} failed)" if total.failures else ""
    call_word = "call" if total.calls == 1 else "calls"
    return f"{total.calls} {call_word}{failed}, {total.input_tokens:,} tokens in, {total.output_tokens:,} out"


async def usage_command(ctx: CommandContext, args: str) -> str:
    """``/usage [today|N days]``."""
    days = parse_days(args)
    runtime = ctx.runtime
    store = runtime.services.memory
    if store is None:
        return "Usage is counted in the memory database, which is not open on this host."
    zone = runtime.services.timezone
    first, last = period_days(runtime.clock.now(), ZoneInfo(zone), days)
    profile = runtime.profile.id
    totals = await store.usage.totals(first, last, profile=profile)
    label = period_label(days, first, last, zone)
    if not totals.calls and not totals.tools:
        return f"No model or tool calls of {profile} {label}."
    return "\n".join([f"Usage of {profile} {label}:", *render_lines(totals)])


def render_lines(totals: UsageTotals) -> list[str]:
    """The lines under the heading: the total, then by channel, by model and the tools."""
    lines = [f"model calls: {sum_text(totals.total)}"]
    dimensions: tuple[tuple[str, CallDimension], ...] = (("by channel", "channel"), ("by model", "model"))
    for title, dimension in dimensions:
        rows = totals.calls_by(dimension)
        if rows:
            lines.append(f"{title}:")
            lines += [f"- {channel_name(name) if dimension == 'channel' else name}: {sum_text(s)}" for name, s in rows]
    tools = totals.tools_by_name()
    if tools:
        lines.append("tools: " + ", ".join(f"{name} ×{count}" for name, count in tools))
    return lines
