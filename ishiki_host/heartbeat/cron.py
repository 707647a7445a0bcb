"""Cron expressions in a time zone: parsing (cronsim), next and latest fire times, and their DST behaviour.

Five fields, ``minute hour day-of-month month day-of-week``, with Vixie cron's day rule: when both day fields
are restricted, a day matches if *either* matches (``0 9 13 * 5`` is "the 13th, and every Friday"); a day field
counts as unrestricted when it starts with ``*`` (so ``*/2`` does too, as in Vixie and Debian cron). Names
(``MON``, ``JAN``), ranges, lists, steps, ``L``, ``LW``, ``5L``, ``MON#2`` and the macros ``@hourly``,
``@daily``/``@midnight``, ``@weekly``, ``@monthly``, ``@yearly``/``@annually`` are accepted.

Daylight saving time (the choice follows Debian cron): an expression with a fixed minute and hour (neither
starts with ``*``) is a wall-clock time. On a spring-forward day a time inside the gap (``30 2 * * *`` in
Europe/Berlin on the last Sunday of March) fires once, at the first wall time after the gap (03:00); on a
fall-back day a time that occurs twice (``30 1 * * *`` in America/New_York) fires once, at its first
occurrence. An expression whose minute or hour starts with ``*`` is an interval: it follows real time, so
``0 * * * *`` fires at both 01:00s of a fall-back night and skips the hour that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from ishiki_host.errors import HeartbeatInvalid

__all__ = ["FIELD_NAMES", "MACROS", "CronExpr", "parse_cron", "zone"]

FIELD_NAMES = ("minute", "hour", "day-of-month", "month", "day-of-week")
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Any fixed date works: parsing only needs a starting point in the zone.
_PARSE_AT = datetime(2000, 1, 1)
# cronsim names its fields with seconds first and capitalised ("Bad day-of-month").
_CRONSIM_FIELDS = {f"bad {name}": i for i, name in enumerate(FIELD_NAMES)}


@lru_cache(maxsize=256)
def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; ``HeartbeatInvalid`` naming it if there is no such zone."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise HeartbeatInvalid(
            f"unknown time zone {name!r} (use an IANA name such as 'Europe/Berlin' or 'UTC')"
        ) from exc


@dataclass(frozen=True, slots=True)
class CronExpr:
    """A valid five-field expression in a time zone. ``fields`` are upper-cased, macros expanded."""

    text: str
    fields: tuple[str, str, str, str, str]
    tz: ZoneInfo
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]

    @property
    def expression(self) -> str:
        """The normalized expression (macros expanded)."""
        return " ".join(self.fields)

    def next_after(self, after: float) -> float | None:
        """The first fire time strictly after ``after`` (epoch seconds); ``None`` if none within 50 years."""
        return _next_after(self, after)

    def latest_at_or_before(self, at: float) -> float | None:
        """The last fire time at or before ``at``; ``None`` if none within 50 years."""
        # Fire times are whole minutes; starting one second past the floor makes ``at`` itself count.
        start = datetime.fromtimestamp(int(at), self.tz) + timedelta(seconds=1)
        sim = CronSim(self.expression, start, reverse=True)
        try:
            fire = next(sim).timestamp()
        except StopIteration:
            return None
        # Walking wall time back from the second pass of a fall-back hour misses the first pass's fire time.
        for _ in range(4):
            later = self.next_after(fire)
            if later is None or later > at:
                break
            fire = later
        return fire


# A sync of heartbeats.json asks about many beats sharing an expression and zone at one instant.
@lru_cache(maxsize=8192)
def _next_after(cron: CronExpr, after: float) -> float | None:
    sim = CronSim(cron.expression, datetime.fromtimestamp(after, cron.tz))
    for _ in range(4):
        try:
            fire = next(sim).timestamp()
        except StopIteration:
            return None
        # cronsim walks wall time, so from the second pass of a fall-back hour it can name the first pass.
        if fire > after:
            return fire
    return None


def parse_cron(text: str, tz: str) -> CronExpr:
    """Parse ``text`` in the zone named ``tz``; ``HeartbeatInvalid`` names the expression and the bad field."""
    return _parse(" ".join(text.split()), tz)


@lru_cache(maxsize=4096)
def _parse(text: str, tz: str) -> CronExpr:
    zone_info = zone(tz)
    expanded = MACROS.get(text.lower(), text).upper()
    parts = expanded.split()
    if text.startswith("@") and text.lower() not in MACROS:
        raise HeartbeatInvalid(f"cron {text!r}: unknown macro (known: {', '.join(sorted(MACROS))})")
    if len(parts) != 5:
        raise HeartbeatInvalid(
            f"cron {text!r}: expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}"
        )
    try:
        sim = CronSim(expanded, _PARSE_AT.replace(tzinfo=zone_info))
    except CronSimError as exc:
        raise HeartbeatInvalid(f"cron {text!r}: {_explain(exc, MACROS.get(text.lower(), text).split())}") from exc
    fields = (parts[0], parts[1], parts[2], parts[3], parts[4])
    return CronExpr(
        text, fields, zone_info, frozenset(sim.minutes), frozenset(sim.hours), frozenset(sim.days),
        frozenset(sim.months),
    )  # fmt: skip


def _explain(exc: CronSimError, parts: list[str]) -> str:
    index = _CRONSIM_FIELDS.get(str(exc).lower())
    if index is None:
        return str(exc)
    return f"bad {FIELD_NAMES[index]} field {parts[index]!r}"
