"""What makes a beat valid, beyond its stored fields: its cron and zone, the one-time rule, the tools' limits.

One-time beats (``recurring: false``) must describe one moment: a single minute, hour, day of month and month
(plain numbers, a month name is fine) and ``*`` as day of week, e.g. ``30 14 24 12 *``. The beat fires at the
next occurrence of that moment and is then spent. Beats made by the tools must also fire within a year (so
``0 9 29 2 *`` is refused in most years) and may not run every minute (a minute field that matches all 60
minutes: ``*``, ``*/1``, ``0-59``). ``heartbeats.json`` is the operator's, so those two limits do not apply.

The reserved beat ``__clear_images__`` carries its age in its text: a number of seconds or a number with a unit
``s``, ``m``, ``h``, ``d``, ``w`` (``7d``). Its type may be left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ishiki_host.errors import HeartbeatInvalid, StoreError
from ishiki_host.heartbeat.cron import CronExpr, parse_cron
from ishiki_host.store.repos.beat_types import BeatSpec

__all__ = [
    "CLEAR_IMAGES_ID",
    "FILE_RULES",
    "ONE_TIME_HORIZON",
    "TOOL_RULES",
    "BeatRules",
    "check_beat",
    "next_run_for",
    "parse_duration",
]

CLEAR_IMAGES_ID = "__clear_images__"
ONE_TIME_HORIZON = 366 * 86400.0
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class BeatRules:
    """Limits on top of validity: every-minute schedules, and how far away a one-time beat may fire."""

    allow_every_minute: bool = True
    one_time_horizon: float | None = None


FILE_RULES = BeatRules()
TOOL_RULES = BeatRules(allow_every_minute=False, one_time_horizon=ONE_TIME_HORIZON)


def parse_duration(text: str) -> float:
    """Seconds in ``"604800"``, ``"90m"`` or ``"7d"``; ``HeartbeatInvalid`` for anything else."""
    match = _DURATION.match(text)
    if match is None:
        raise HeartbeatInvalid(
            f"{text.strip()!r} is not an age: give seconds or a number with s, m, h, d or w (e.g. '7d')"
        )
    seconds = float(match[1]) * _UNITS[(match[2] or "s").lower()]
    if seconds <= 0:
        raise HeartbeatInvalid(f"age {text.strip()!r} must be more than zero")
    return seconds


def next_run_for(spec: BeatSpec, *, default_tz: str, after: float) -> float | None:
    """When ``spec`` fires next after ``after``, in its own zone or ``default_tz``."""
    return parse_cron(spec.cron, spec.timezone or default_tz).next_after(after)


def check_beat(spec: BeatSpec, *, default_tz: str, now: float, rules: BeatRules = FILE_RULES) -> float:
    """Validate ``spec`` under ``rules`` and return its first run after ``now``.

    ``HeartbeatInvalid`` says what is wrong (without the beat's id; callers add where it came from).
    """
    try:
        spec.validate()
    except StoreError as exc:
        raise HeartbeatInvalid(str(exc).removeprefix(f"beat {spec.id!r}: ")) from exc
    cron = parse_cron(spec.cron, spec.timezone or default_tz)
    if spec.id == CLEAR_IMAGES_ID:
        parse_duration(spec.text)
    if not rules.allow_every_minute and len(cron.minutes) == 60:
        raise HeartbeatInvalid(f"cron {spec.cron!r} runs every minute; use a fixed minute or a step of 2 or more")
    if not spec.recurring:
        _check_one_time(cron)
    first = cron.next_after(now)
    if first is None:
        raise HeartbeatInvalid(f"cron {spec.cron!r} never fires")
    if not spec.recurring and rules.one_time_horizon is not None and first - now > rules.one_time_horizon:
        raise HeartbeatInvalid(f"one-time cron {spec.cron!r} does not fire within a year")
    return first


def _check_one_time(cron: CronExpr) -> None:
    single = all(len(values) == 1 for values in (cron.minutes, cron.hours, cron.days, cron.months))
    if not single or min(cron.days) < 1 or cron.fields[4] != "*":
        raise HeartbeatInvalid(
            f"one-time cron {cron.text!r} would fire more than once: give one minute, hour, day of month and "
            "month, and '*' as day of week (e.g. '30 14 24 12 *' for 24 December at 14:30)"
        )
