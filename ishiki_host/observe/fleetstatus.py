"""What ``ishiki status`` of a supervisor shows of its workers, summed: their activity and their gateways.

Each worker says its ``RecentActivity.snapshot()`` and its ``Gateway.status()`` in its answer to the
supervisor's ``status`` (every 2 s). ``merged_activity`` sums activity snapshots (turns by minute of the last
hour: rates add up across workers); ``merged_gateway`` sums gateway statuses' providers and members (calls,
failures, tokens, errors), keeping each member's worst breaker state and its highest latency percentiles; the
scheduler's lanes stay those of the first status given (the supervisor's own: with slots leased from it they
are the host's, and a sum with the workers' would count their calls twice). They are of the workers alive
now: like one process's gateway stats, they count from their gateway's start (``/metrics`` is the one that
stays monotonic across a worker's restart: ``ishiki_host.observe.fleet``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host.jsontypes import Json

__all__ = ["merged_activity", "merged_gateway"]

_SUMMED = frozenset({"providers", "members"})
"""The sections of a gateway status merged across processes."""
_STATES = ("closed", "half_open", "open")
"""Breaker states, best first: the merged member shows the worst any worker has."""
_HIGHEST = frozenset({"p50", "p95", "probe_in_seconds"})
"""Numbers of a member's status that are not summed: the highest one stands for the host."""
_MEMBER_FIRST = frozenset({"failures"})
"""A breaker's consecutive failures: the highest of the workers', not their sum."""


def merged_activity(snapshots: Iterable[object]) -> dict[str, Json]:
    """Activity snapshots (``RecentActivity.snapshot``) summed, ``turnsByStatus`` by status (what is not a
    mapping, a worker that has not said yet, is left out)."""
    return _sum_all(snapshots)


def merged_gateway(statuses: Iterable[object]) -> dict[str, Json]:
    """Gateway statuses (``Gateway.status``) merged: providers' numbers summed; each member's calls, tokens and
    errors summed, its breaker state the worst, its consecutive failures and latency percentiles the highest;
    the first error that is set; any other section (``scheduler``) the first status's."""
    merged: dict[str, Json] = {}
    for status in statuses:
        if not isinstance(status, Mapping):
            continue  # a worker that has not said yet
        for section, value in status.items():
            if section not in _SUMMED or not isinstance(value, Mapping):
                merged.setdefault(section, value)
                continue
            held = merged.setdefault(section, {})
            assert isinstance(held, dict)
            for name, block in value.items():
                if isinstance(block, Mapping):
                    held[name] = _member(held.get(name), block) if section == "members" else _sum(held.get(name), block)
    return merged


def _sum_all(blocks: Iterable[object]) -> dict[str, Json]:
    total: dict[str, Json] = {}
    for block in blocks:
        if isinstance(block, Mapping):
            total = _sum(total, block)
    return total


def _sum(held: Json, block: Mapping[str, Json], highest: frozenset[str] = frozenset()) -> dict[str, Json]:
    """``held`` (a mapping, or nothing yet) and ``block`` merged: numbers added (those named in ``highest``
    the larger), mappings merged alike, any other value the first that is set."""
    out: dict[str, Json] = dict(held) if isinstance(held, Mapping) else {}
    for key, value in block.items():
        mine = out.get(key)
        if isinstance(value, int | float) and isinstance(mine, int | float) and _number(value) and _number(mine):
            out[key] = max(mine, value) if key in highest else _round(mine + value)
        elif isinstance(value, Mapping):
            out[key] = _sum(mine, value, highest)
        elif mine is None:
            out[key] = value
    return out


def _member(held: Json, block: Mapping[str, Json]) -> dict[str, Json]:
    out = _sum(held, block, _HIGHEST | _MEMBER_FIRST)
    states = [s for s in (held.get("state") if isinstance(held, Mapping) else None, block.get("state")) if s]
    if states:
        out["state"] = max(states, key=lambda s: _STATES.index(s) if s in _STATES else len(_STATES))
    return out


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _round(value: float) -> float:
    return value if isinstance(value, int) else round(value, 6)
