"""``/models``: the gateway's providers and members, and the model calls and tokens over time.

From ``ctx.status()["gateway"]`` (masked before anything is shown): each provider (its API, base URL, error,
calls, failures, tokens), each member (``provider:modelId``: its circuit breaker's state and failures, calls,
tokens, latency p50/p95 of its recent successful calls, errors by kind); from ``ctx.models()`` the groups
of ``models.yaml`` and the prices, beside the model each profile uses. The counts are since the gateway was
built (a change to ``models.yaml`` rebuilds it).

From the memory database's hourly usage (``ctx.services.memory.usage.series``): calls and tokens per model
over the last ``days`` (``?days=1`` hourly, ``7`` or ``30`` daily) as server-side SVG charts, and the totals
per model with their cost where ``models.yaml`` gives the model a ``price``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from ishiki_host import Json, ModelPrice, UsagePoint, UsageSum, usage_cost

from ishiki_dashboard.charts import Series, bar_chart, format_value, line_chart
from ishiki_dashboard.html import Safe, join, link, masked, section, table, tag

if TYPE_CHECKING:
    from ishiki_host import HostPluginContext

    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["PERIODS", "register", "usage_labels"]

PERIODS = (1, 7, 30)
"""The periods the charts offer, in days (the first is drawn per hour, the others per day)."""
_BREAKER_TONES = {"closed": "ok", "half_open": "warn", "half-open": "warn", "open": "bad"}


def register(dash: Dashboard) -> None:
    """Mount the page of this module."""
    page = _Models(dash)
    dash.page("/models", page.index, title="Models", nav="models")


class _Models:
    def __init__(self, dash: Dashboard):
        self.dash = dash

    @property
    def ctx(self) -> HostPluginContext:
        return self.dash.ctx

    async def index(self, request: DashRequest) -> str:
        """Providers, groups and members now; usage over the chosen period."""
        gateway = masked(self.ctx.status().get("gateway"))
        report = gateway if isinstance(gateway, Mapping) else {}
        days = _days(request.query.get("days"))
        parts = [
            section("Providers", _providers(_mapping(report.get("providers")))),
            section("Groups", self._groups()),
            section("Members", _members(_mapping(report.get("members")))),
            section(
                f"Usage, last {days} day{'s' if days > 1 else ''}", Safe(self._periods(days) + await self._usage(days))
            ),
        ]
        return "".join(parts)

    def _groups(self) -> Safe:
        """The groups of ``models.yaml`` with their members and strategy, and which profile uses what."""
        groups = self.ctx.models().groups
        rows = [(name, ", ".join(g.members), g.strategy) for name, g in sorted(groups.items())]
        used = [(p.id, p.profile.model) for p in self.ctx.profiles() if p.profile is not None]
        return join([
            table(["Group", "Members", "Strategy"], rows, empty="no group in models.yaml"),
            table(["Profile", "Model (group or provider:model)"], used, empty="no profile loaded"),
        ])  # fmt: skip

    def _periods(self, days: int) -> str:
        links = [
            tag("strong", f"{n} d") if n == days else link(self.dash.url(f"/models?days={n}"), f"{n} d")
            for n in PERIODS
        ]
        return f'<p class="periods">{" · ".join(links)}</p>'

    async def _usage(self, days: int) -> str:
        memory = self.ctx.services.memory
        if memory is None:
            why = self.ctx.services.memory_error or "the host runs without data/memory.db"
            return str(tag("p", f"No usage history: this host has no memory database ({why}).", cls="notice"))
        zone = _zone(self.ctx.services.timezone)
        today = datetime.fromtimestamp(self.ctx.clock.now(), zone).date()
        first = today - timedelta(days=days - 1)
        points = await memory.usage.series(first.isoformat(), today.isoformat())
        labels, keys = usage_labels(first, today, hourly=days == 1)
        models = sorted({p.model for p in points})
        calls = _series(points, models, keys, hourly=days == 1, value=lambda s: s.calls)
        tokens = _series(points, models, keys, hourly=days == 1, value=lambda s: s.input_tokens + s.output_tokens)
        charts = [
            line_chart(calls, labels=labels, title="Model calls", unit=""),
            bar_chart(tokens, labels=labels, title="Tokens (input + output)", unit=""),
        ]
        return "".join(f'<figure class="chart">{c}</figure>' for c in charts) + self._totals(points)

    def _totals(self, points: Sequence[UsagePoint]) -> str:
        sums: dict[str, UsageSum] = {}
        for point in points:
            sums[point.model] = sums.get(point.model, UsageSum()) + point.sum
        prices = self.ctx.models().prices()  # by provider:modelId, as the usage table names models
        rows = [
            (model, s.calls, s.failures, s.input_tokens, s.output_tokens, _cost(s, prices.get(model)))
            for model, s in sorted(sums.items())
        ]
        headers = ["Model", "Calls", "Failed", "Input tokens", "Output tokens", "Cost"]
        return str(table(headers, rows, empty="no model calls in this period"))


def usage_labels(first: date, last: date, *, hourly: bool) -> tuple[list[str], list[tuple[str, int | None]]]:
    """The x labels of the period and the ``(day, hour)`` keys they stand for (``hour`` ``None`` per day)."""
    days = [(first + timedelta(days=n)).isoformat() for n in range((last - first).days + 1)]
    if hourly:
        keys: list[tuple[str, int | None]] = [(day, hour) for day in days for hour in range(24)]
        return [f"{hour:02d}:00" for _, hour in keys], keys
    return [day[5:] for day in days], [(day, None) for day in days]


def _series(
    points: Sequence[UsagePoint],
    models: Sequence[str],
    keys: Sequence[tuple[str, int | None]],
    *,
    hourly: bool,
    value: Callable[[UsageSum], float],
) -> list[Series]:
    index = {key: n for n, key in enumerate(keys)}
    values = {model: [0.0] * len(keys) for model in models}
    for point in points:
        slot = index.get((point.day, point.hour if hourly else None))
        if slot is not None:
            values[point.model][slot] += value(point.sum)
    return [Series(model, tuple(values[model])) for model in models]


def _providers(providers: Mapping[str, Json]) -> Safe:
    rows = []
    for pid, raw in sorted(providers.items()):
        p = _mapping(raw)
        tokens = _mapping(p.get("tokens"))
        rows.append((pid, p.get("api", ""), p.get("base_url", ""), _error(p.get("error")), p.get("calls", 0),
                     p.get("failures", 0), _tokens(tokens)))  # fmt: skip
    return table(["Provider", "API", "Base URL", "Error", "Calls", "Failures", "Tokens"], rows, empty="no provider")


def _members(members: Mapping[str, Json]) -> Safe:
    rows = []
    for member, raw in sorted(members.items()):
        m = _mapping(raw)
        latency = _mapping(m.get("latency"))
        errors = ", ".join(f"{kind}: {n}" for kind, n in _mapping(m.get("errors")).items()) or "none"
        rows.append((member, _breaker(m), m.get("calls", 0), _tokens(_mapping(m.get("tokens"))),
                     _seconds(latency.get("p50")), _seconds(latency.get("p95")), errors,
                     _error(m.get("last_error"))))  # fmt: skip
    headers = ["Member", "Breaker", "Calls", "Tokens", "p50", "p95", "Errors", "Last error"]
    return table(headers, rows, empty="no member")


def _breaker(member: Mapping[str, Json]) -> Safe:
    state = str(member.get("state", "?"))
    text = state + (f" ({member['failures']} failures)" if member.get("failures") else "")
    probe = member.get("probe_in_seconds")
    if isinstance(probe, int | float):
        text += f", probe in {probe:.0f} s"
    return tag("span", text, cls=f"badge badge-{_BREAKER_TONES.get(state, 'off')}")


def _tokens(tokens: Mapping[str, Json]) -> str:
    if not tokens:
        return ""
    shown = {k: v for k, v in tokens.items() if isinstance(v, int | float)}
    return " / ".join(f"{format_value(float(v))} {k}" for k, v in shown.items())


def _seconds(value: Json) -> str:
    return "—" if not isinstance(value, int | float) else f"{value * 1000:.0f} ms"


def _error(value: Json) -> Safe | str:
    return tag("span", value, cls="error") if value else ""


def _cost(s: UsageSum, price: ModelPrice | None) -> str:
    cost = usage_cost(s, price)
    return "no price configured" if cost is None or price is None else format_value(cost, price.currency)


def _mapping(value: Json | None) -> Mapping[str, Json]:
    return value if isinstance(value, Mapping) else {}


def _strs(value: Json | None) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _days(text: str | None) -> int:
    return int(text) if text in {str(n) for n in PERIODS} and text is not None else 7


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ValueError, KeyError):
        return ZoneInfo("UTC")
