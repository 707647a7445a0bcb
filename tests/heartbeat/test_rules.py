"""What a valid beat is: the one-time rule, the tools' every-minute and one-year limits, clearing ages."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ishiki_host.errors import HeartbeatInvalid
from ishiki_host.heartbeat import check_beat, parse_duration
from ishiki_host.heartbeat.rules import CLEAR_IMAGES_ID, FILE_RULES, TOOL_RULES
from ishiki_host.store import BeatSpec

NOW_TEXT = "2024-03-01 12:00"


def _spec(cron: str, *, recurring: bool = True, text: str = "drink water", beat_id: str = "b") -> BeatSpec:
    return BeatSpec(beat_id, text, "reminder", cron, recurring=recurring)


@pytest.mark.parametrize("cron", ["* * * * *", "*/1 * * * *", "0-59 * * * *", "* 9 * * *", "*/1 9-17 * * 1-5"])
def test_tools_refuse_every_minute(cron: str, wall: Callable[[str, str], float]) -> None:
    now = wall(NOW_TEXT, "UTC")
    with pytest.raises(HeartbeatInvalid, match="runs every minute"):
        check_beat(_spec(cron), default_tz="UTC", now=now, rules=TOOL_RULES)
    assert check_beat(_spec(cron), default_tz="UTC", now=now, rules=FILE_RULES) > now  # the operator may


@pytest.mark.parametrize("cron", ["*/2 * * * *", "0 * * * *", "0,30 9 * * *"])
def test_tools_accept_other_intervals(cron: str, wall: Callable[[str, str], float]) -> None:
    assert check_beat(_spec(cron), default_tz="UTC", now=wall(NOW_TEXT, "UTC"), rules=TOOL_RULES) > 0


@pytest.mark.parametrize(
    "cron",
    ["0 9 * * *", "0 9 24 12 1", "0 9 24 * *", "0 9,10 24 12 *", "0 9 1-2 12 *", "0 9 L 12 *", "*/30 9 24 12 *"],
)
def test_one_time_needs_a_single_moment(cron: str, wall: Callable[[str, str], float]) -> None:
    with pytest.raises(HeartbeatInvalid, match="would fire more than once"):
        check_beat(_spec(cron, recurring=False), default_tz="UTC", now=wall(NOW_TEXT, "UTC"), rules=FILE_RULES)


def test_one_time_fires_at_the_next_occurrence(wall: Callable[[str, str], float]) -> None:
    now = wall(NOW_TEXT, "Europe/Berlin")
    first = check_beat(_spec("30 14 24 DEC *", recurring=False), default_tz="Europe/Berlin", now=now, rules=TOOL_RULES)
    assert first == wall("2024-12-24 14:30", "Europe/Berlin")
    # Already past this year: next year's, still within a year.
    first = check_beat(_spec("0 9 1 2 *", recurring=False), default_tz="UTC", now=now, rules=TOOL_RULES)
    assert first == wall("2025-02-01 09:00", "UTC")


def test_tools_refuse_a_one_time_beat_beyond_a_year(wall: Callable[[str, str], float]) -> None:
    now = wall(NOW_TEXT, "UTC")  # after 29 Feb 2024: the next one is in 2028
    with pytest.raises(HeartbeatInvalid, match="does not fire within a year"):
        check_beat(_spec("0 9 29 2 *", recurring=False), default_tz="UTC", now=now, rules=TOOL_RULES)
    assert check_beat(_spec("0 9 29 2 *", recurring=False), default_tz="UTC", now=now, rules=FILE_RULES) == wall(
        "2028-02-29 09:00", "UTC"
    )


def test_fields_and_zone_are_checked(wall: Callable[[str, str], float]) -> None:
    now = wall(NOW_TEXT, "UTC")
    with pytest.raises(HeartbeatInvalid, match=r"^text is empty$"):
        check_beat(_spec("0 9 * * *", text="  "), default_tz="UTC", now=now)
    with pytest.raises(HeartbeatInvalid, match="unknown time zone 'Nowhere/City'"):
        check_beat(BeatSpec("b", "x", "task", "0 9 * * *", timezone="Nowhere/City"), default_tz="UTC", now=now)
    with pytest.raises(HeartbeatInvalid, match="unknown time zone 'Bad/Default'"):
        check_beat(_spec("0 9 * * *"), default_tz="Bad/Default", now=now)


@pytest.mark.parametrize(("text", "seconds"), [("3600", 3600), ("90m", 5400), ("7d", 604800), (" 2 W ", 1209600)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["a week", "7 days", "-5", "0", "1y", ""])
def test_bad_durations(text: str) -> None:
    with pytest.raises(HeartbeatInvalid):
        parse_duration(text)


def test_clear_images_beat_needs_an_age(wall: Callable[[str, str], float]) -> None:
    now = wall(NOW_TEXT, "UTC")
    with pytest.raises(HeartbeatInvalid, match="is not an age"):
        check_beat(_spec("0 3 * * *", beat_id=CLEAR_IMAGES_ID, text="clear them"), default_tz="UTC", now=now)
    assert check_beat(_spec("0 3 * * *", beat_id=CLEAR_IMAGES_ID, text="30d"), default_tz="UTC", now=now) > now
