"""Model calls, tokens and tool calls, counted per hour (the ``usage_calls`` and ``usage_tools`` tables).

The host notes each model call and each tool call as it ends (``note_call``, ``note_tool``): in memory, no I/O,
so neither a turn nor a gateway call ever waits on the database. ``flush`` adds what was noted since the last
flush to the stored counters in one transaction (the host flushes every few seconds and when it stops; a
failed flush keeps its counts for the next one). ``totals`` flushes first, so it includes the call of a moment
ago; another process reading the file (``ishiki usage``) sees what the running host has flushed.

A row counts one hour of one profile on one channel (``platform:selfId``; empty for a cross-mode runtime and
for calls made outside any runtime) with one model or tool. ``day`` and ``hour`` are those of the host's time
zone when the call ended (``usage_bucket``), so "today" is the host's today. A row's ``model`` is the gateway
member that answered (``provider:modelId``), so ``ModelsConfig.price(model)`` finds its configured price and
``usage_cost`` prices a sum, a total or a point of ``series`` (the hourly points a chart draws).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo

import anyio

from ishiki_host.errors import StoreError

if TYPE_CHECKING:
    from ishiki_host.config.models import ModelPrice
    from ishiki_host.store.db import Database

__all__ = [
    "CallDimension",
    "CallTotal",
    "ToolTotal",
    "UsagePoint",
    "UsageRepo",
    "UsageSum",
    "UsageTotals",
    "period_days",
    "usage_bucket",
    "usage_cost",
]

Bucket = tuple[str, int]
"""``(day, hour)``: ``YYYY-MM-DD`` and 0-23 in the host's time zone."""
_CallKey = tuple[str, int, str, str, str]  # day, hour, profile, channel, model
_ToolKey = tuple[str, int, str, str, str]  # day, hour, profile, channel, tool
CallDimension = Literal["profile", "channel", "model"]
"""What ``UsageTotals.calls_by`` sums model calls per."""


def usage_bucket(ts: float, zone: ZoneInfo) -> Bucket:
    """The ``(day, hour)`` of the epoch time ``ts`` in ``zone``."""
    local = datetime.fromtimestamp(ts, zone)
    return local.date().isoformat(), local.hour


def period_days(ts: float, zone: ZoneInfo, days: int) -> tuple[str, str]:
    """The first and last day of the ``days`` days ending with the day of ``ts`` in ``zone`` (1: that day)."""
    if days < 1:
        raise ValueError(f"a usage period is at least one day, not {days}")
    last = datetime.fromtimestamp(ts, zone).date()
    return (last - timedelta(days=days - 1)).isoformat(), last.isoformat()


@dataclass(frozen=True, slots=True)
class UsageSum:
    """Calls, failed calls and tokens of a group of model calls."""

    calls: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: UsageSum) -> UsageSum:
        return UsageSum(
            self.calls + other.calls,
            self.failures + other.failures,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
        )


@dataclass(frozen=True, slots=True)
class CallTotal:
    """The model calls of one profile on one channel with one model, over a period."""

    profile: str
    channel: str
    model: str
    sum: UsageSum


@dataclass(frozen=True, slots=True)
class UsagePoint:
    """The model calls with one model in one hour (``day`` ``YYYY-MM-DD``, ``hour`` 0-23, host time zone), summed
    over profiles and channels (or of one profile): a point of ``UsageRepo.series``."""

    day: str
    hour: int
    model: str
    sum: UsageSum


def usage_cost(usage: UsageSum | CallTotal | UsagePoint, price: ModelPrice | None) -> float | None:
    """What the tokens of ``usage`` cost at ``price`` (in ``price.currency``), or ``None`` without a price.

    The price of a ``CallTotal`` or ``UsagePoint`` is that of its ``model``: ``ModelsConfig.price(usage.model)``.
    """
    if price is None:
        return None
    counted = usage if isinstance(usage, UsageSum) else usage.sum
    return price.cost(counted.input_tokens, counted.output_tokens)


@dataclass(frozen=True, slots=True)
class ToolTotal:
    """The calls of one tool by one profile on one channel, over a period."""

    profile: str
    channel: str
    tool: str
    calls: int


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """What ``UsageRepo.totals`` found for the days ``first_day`` to ``last_day`` (both included)."""

    first_day: str
    last_day: str
    calls: tuple[CallTotal, ...] = ()
    tools: tuple[ToolTotal, ...] = ()

    @property
    def total(self) -> UsageSum:
        """Every model call of the period."""
        return sum((c.sum for c in self.calls), UsageSum())

    def calls_by(self, dimension: CallDimension) -> list[tuple[str, UsageSum]]:
        """The model calls summed per profile, channel or model, the most tokens first."""
        sums: dict[str, UsageSum] = {}
        for call in self.calls:
            name = getattr(call, dimension)
            sums[name] = sums.get(name, UsageSum()) + call.sum
        return sorted(sums.items(), key=lambda item: (-(item[1].input_tokens + item[1].output_tokens), item[0]))

    def tools_by_name(self) -> list[tuple[str, int]]:
        """The tool calls summed per tool, the most called first."""
        counts: dict[str, int] = {}
        for tool in self.tools:
            counts[tool.tool] = counts.get(tool.tool, 0) + tool.calls
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


class UsageRepo:
    """The ``usage_calls`` and ``usage_tools`` tables (see the module docstring)."""

    def __init__(self, db: Database):
        self._db = db
        self._calls: dict[_CallKey, list[int]] = {}
        self._tools: dict[_ToolKey, int] = {}

    @property
    def pending(self) -> int:
        """How many rows the next flush writes (one per hour, profile, channel and model or tool noted)."""
        return len(self._calls) + len(self._tools)

    def note_call(
        self,
        bucket: Bucket,
        profile: str,
        channel: str,
        model: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        failed: bool = False,
    ) -> None:
        """Count one model call (in memory until the next ``flush``)."""
        key = (bucket[0], bucket[1], profile, channel, model)
        counts = self._calls.get(key)
        if counts is None:
            counts = self._calls[key] = [0, 0, 0, 0]
        counts[0] += 1
        counts[1] += failed
        counts[2] += max(0, input_tokens)
        counts[3] += max(0, output_tokens)

    def note_tool(self, bucket: Bucket, profile: str, channel: str, tool: str) -> None:
        """Count one tool call (in memory until the next ``flush``)."""
        key = (bucket[0], bucket[1], profile, channel, tool)
        self._tools[key] = self._tools.get(key, 0) + 1

    async def flush(self) -> int:
        """Add the counts noted so far to the tables; returns how many rows it wrote. On a ``StoreError`` the
        counts are kept for the next flush and the error is raised."""
        calls, tools = self._calls, self._tools
        if not calls and not tools:
            return 0
        self._calls, self._tools = {}, {}
        try:
            with anyio.CancelScope(shield=True):  # a flush cut short would lose the counts it took
                written = await self._db.write(lambda conn: _add(conn, calls.items(), tools.items()))
        except StoreError:
            self._merge_back(calls, tools)
            raise
        return written

    def _merge_back(self, calls: dict[_CallKey, list[int]], tools: dict[_ToolKey, int]) -> None:
        for key, counts in calls.items():
            now = self._calls.setdefault(key, [0, 0, 0, 0])
            for index, value in enumerate(counts):
                now[index] += value
        for tool_key, count in tools.items():
            self._tools[tool_key] = self._tools.get(tool_key, 0) + count

    async def totals(self, first_day: str, last_day: str, *, profile: str | None = None) -> UsageTotals:
        """The calls and tool calls of the days ``first_day`` to ``last_day`` (``YYYY-MM-DD``, both included),
        of one profile or (``None``) all; flushes first."""
        for day in (first_day, last_day):
            _check_day(day)
        await self.flush()
        return await self._db.read(lambda conn: _totals(conn, first_day, last_day, profile))

    async def series(self, first_day: str, last_day: str, *, profile: str | None = None) -> list[UsagePoint]:
        """One point per hour and model with calls in the days ``first_day`` to ``last_day`` (both included), of
        one profile or (``None``) all, in time order then by model; hours without calls have no point. Flushes
        first."""
        for day in (first_day, last_day):
            _check_day(day)
        await self.flush()
        return await self._db.read(lambda conn: _series(conn, first_day, last_day, profile))


def _check_day(day: str) -> None:
    try:
        date.fromisoformat(day)
    except ValueError:
        raise StoreError(f"a usage day is written YYYY-MM-DD, not {day!r}") from None


def _add(
    conn: sqlite3.Connection,
    calls: Iterable[tuple[_CallKey, list[int]]],
    tools: Iterable[tuple[_ToolKey, int]],
) -> int:
    call_rows = [(*key, *counts) for key, counts in calls]
    tool_rows = [(*key, count) for key, count in tools]
    conn.executemany(
        "INSERT INTO usage_calls (day, hour, profile, channel, model, calls, failures, input_tokens, output_tokens) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (day, hour, profile, channel, model) DO UPDATE SET "
        "calls = calls + excluded.calls, failures = failures + excluded.failures, "
        "input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens",
        call_rows,
    )
    conn.executemany(
        "INSERT INTO usage_tools (day, hour, profile, channel, tool, calls) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (day, hour, profile, channel, tool) DO UPDATE SET calls = calls + excluded.calls",
        tool_rows,
    )
    return len(call_rows) + len(tool_rows)


def _totals(conn: sqlite3.Connection, first: str, last: str, profile: str | None) -> UsageTotals:
    calls = conn.execute(
        "SELECT profile, channel, model, sum(calls), sum(failures), sum(input_tokens), sum(output_tokens) "
        "FROM usage_calls WHERE day BETWEEN ? AND ? AND (? IS NULL OR profile = ?) "
        "GROUP BY profile, channel, model ORDER BY profile, channel, model",
        (first, last, profile, profile),
    )
    call_totals = tuple(CallTotal(r[0], r[1], r[2], UsageSum(r[3], r[4], r[5], r[6])) for r in calls)
    tools = conn.execute(
        "SELECT profile, channel, tool, sum(calls) FROM usage_tools WHERE day BETWEEN ? AND ? "
        "AND (? IS NULL OR profile = ?) GROUP BY profile, channel, tool ORDER BY profile, channel, tool",
        (first, last, profile, profile),
    )
    tool_totals = tuple(ToolTotal(r[0], r[1], r[2], r[3]) for r in tools)
    return UsageTotals(first, last, call_totals, tool_totals)


def _series(conn: sqlite3.Connection, first: str, last: str, profile: str | None) -> list[UsagePoint]:
    rows = conn.execute(
        "SELECT day, hour, model, sum(calls), sum(failures), sum(input_tokens), sum(output_tokens) "
        "FROM usage_calls WHERE day BETWEEN ? AND ? AND (? IS NULL OR profile = ?) "
        "GROUP BY day, hour, model ORDER BY day, hour, model",
        (first, last, profile, profile),
    )
    return [UsagePoint(r[0], r[1], r[2], UsageSum(r[3], r[4], r[5], r[6])) for r in rows]
