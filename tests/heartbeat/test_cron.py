"""Cron expressions: parsing errors, Vixie day rules, time zones, DST fire times."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from ishiki_host.errors import HeartbeatInvalid
from ishiki_host.heartbeat import parse_cron, zone


def _fires(expr: str, tz: str, start: float, count: int) -> list[datetime]:
    cron = parse_cron(expr, tz)
    out: list[datetime] = []
    when = start
    for _ in range(count):
        nxt = cron.next_after(when)
        assert nxt is not None
        out.append(datetime.fromtimestamp(nxt, ZoneInfo(tz)))
        when = nxt
    return out


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("0 25 * * *", r"cron '0 25 \* \* \*': bad hour field '25'"),
        ("61 * * * *", "bad minute field '61'"),
        ("0 0 32 * *", "bad day-of-month field '32'"),
        ("0 0 * 13 *", "bad month field '13'"),
        ("0 0 * * 8", "bad day-of-week field '8'"),
        ("0 0 30 2 *", "bad day-of-month field '30'"),
        ("x 1 * * *", "bad minute field 'x'"),
        ("0 9 * *", "expected 5 fields .* got 4"),
        ("0 0 9 * * *", "expected 5 fields .* got 6"),
        ("@dayly", "unknown macro"),
        ("5-1 * * * *", "bad minute field '5-1'"),
    ],
)
def test_invalid_cron_names_the_field(expr: str, message: str) -> None:
    with pytest.raises(HeartbeatInvalid, match=message):
        parse_cron(expr, "UTC")


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "Europe/Berln", "", "../etc/passwd", "UTC+2"])
def test_unknown_zone_is_named(name: str) -> None:
    with pytest.raises(HeartbeatInvalid, match=re.escape(f"unknown time zone {name!r}")):
        zone(name)
    with pytest.raises(HeartbeatInvalid, match="unknown time zone"):
        parse_cron("0 9 * * *", name)


def test_macros_names_and_whitespace(wall: Callable[[str, str], float]) -> None:
    assert parse_cron("@daily", "UTC").expression == "0 0 * * *"
    assert parse_cron("  0   9 * *  mon-fri ", "UTC").expression == "0 9 * * MON-FRI"
    start = wall("2024-03-01 12:00", "UTC")  # a Friday
    days = [d.strftime("%a %H:%M") for d in _fires("0 9 * * mon-fri", "UTC", start, 3)]
    assert days == ["Mon 09:00", "Tue 09:00", "Wed 09:00"]


def _matching_days(dom: set[int], dows: set[int], either: bool, first: date, last: date) -> list[date]:
    days, day = [], first
    while day <= last:
        a, b = day.day in dom, (day.isoweekday() % 7) in dows
        if (a or b) if either else (a and b):
            days.append(day)
        day += timedelta(days=1)
    return days


@pytest.mark.parametrize(
    ("expr", "dom", "dows", "either"),
    [
        ("0 9 13 * 5", {13}, {5}, True),  # both restricted: the 13th, and every Friday
        ("0 9 1,15 * 1", {1, 15}, {1}, True),
        ("0 9 */2 * 5", set(range(1, 32, 2)), {5}, False),  # '*...' counts as unrestricted: both must match
        ("0 9 * * 5", set(range(1, 32)), {5}, False),
        ("0 9 13 * *", {13}, set(range(7)), False),
    ],
)
def test_day_of_month_and_day_of_week_follow_vixie(
    expr: str, dom: set[int], dows: set[int], either: bool, wall: Callable[[str, str], float]
) -> None:
    start = wall("2024-08-31 12:00", "UTC")
    expected = _matching_days(dom, dows, either, date(2024, 9, 1), date(2024, 12, 31))
    fired = [d.date() for d in _fires(expr, "UTC", start, len(expected))]
    assert fired == expected


def test_daily_in_the_spring_forward_gap_fires_once_after_it(wall: Callable[[str, str], float]) -> None:
    # Europe/Berlin skips 02:00-03:00 on 2024-03-31.
    fired = _fires("30 2 * * *", "Europe/Berlin", wall("2024-03-29 12:00", "Europe/Berlin"), 4)
    assert [d.strftime("%m-%d %H:%M %Z") for d in fired] == [
        "03-30 02:30 CET",
        "03-31 03:00 CEST",
        "04-01 02:30 CEST",
        "04-02 02:30 CEST",
    ]


def test_daily_in_the_repeated_hour_fires_once_at_its_first_pass(wall: Callable[[str, str], float]) -> None:
    # America/New_York repeats 01:00-02:00 on 2024-11-03.
    fired = _fires("30 1 * * *", "America/New_York", wall("2024-11-02 12:00", "America/New_York"), 3)
    assert [d.strftime("%m-%d %H:%M %Z") for d in fired] == ["11-03 01:30 EDT", "11-04 01:30 EST", "11-05 01:30 EST"]
    second_pass = datetime(2024, 11, 3, 1, 10, tzinfo=ZoneInfo("America/New_York"), fold=1).timestamp()
    cron = parse_cron("30 1 * * *", "America/New_York")
    following = cron.next_after(second_pass)
    assert following is not None
    assert datetime.fromtimestamp(following, ZoneInfo("America/New_York")).day == 4
    latest = cron.latest_at_or_before(second_pass)
    assert latest == fired[0].timestamp()


def test_hourly_follows_real_time_across_fall_back(wall: Callable[[str, str], float]) -> None:
    fired = _fires("0 * * * *", "America/New_York", wall("2024-11-03 00:30", "America/New_York"), 4)
    gaps = [b.timestamp() - a.timestamp() for a, b in itertools.pairwise(fired)]
    assert [d.strftime("%H:%M %Z") for d in fired] == ["01:00 EDT", "01:00 EST", "02:00 EST", "03:00 EST"]
    assert gaps == [3600.0, 3600.0, 3600.0]


def test_next_is_strictly_after_and_latest_includes_now(wall: Callable[[str, str], float]) -> None:
    cron = parse_cron("0 9 * * *", "UTC")
    nine = wall("2024-01-01 09:00", "UTC")
    assert cron.next_after(nine - 0.5) == nine
    assert cron.next_after(nine) == nine + 86400
    assert cron.latest_at_or_before(nine) == nine
    assert cron.latest_at_or_before(nine - 0.5) == nine - 86400


def test_rare_dates_are_found_far_ahead(wall: Callable[[str, str], float]) -> None:
    # A fifth Monday in February needs a leap year whose 29th is a Monday.
    fired = _fires("0 0 * 2 MON#5", "UTC", wall("2024-03-01 00:00", "UTC"), 1)
    assert fired[0].date() == date(2044, 2, 29)
