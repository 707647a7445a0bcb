"""``RecentActivity``: turns per minute and errors in the last hour, on a fake clock."""

from __future__ import annotations

import logging

import anyio
import pytest

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.turns import TurnOutcome, TurnStatus
from ishiki_host.observe.activity import RATE_MINUTES, RecentActivity
from ishiki_host.plugins.runtime_api import TurnReport

pytestmark = pytest.mark.anyio

KEY = RuntimeKey.for_cross("ana")


def report(status: TurnStatus = "done") -> TurnReport:
    return TurnReport(1, status, "sent", None, (), (), TurnOutcome(1, status, "sent"))


async def test_an_idle_host_reports_zeros() -> None:
    snapshot = RecentActivity(FakeClock()).snapshot()
    assert snapshot == {
        "turnsLastMinute": 0,
        "turnsPerMinute": 0.0,
        "turnsLastHour": 0,
        "failedTurnsLastHour": 0,
        "errorsLastHour": 0,
        "turnsByStatus": {},
    }


async def test_turns_are_counted_by_minute_and_status() -> None:
    clock = FakeClock()
    activity = RecentActivity(clock)
    for _ in range(3):
        activity(KEY, report())
    activity(KEY, report("failed"))
    await clock.advance(60)
    activity(KEY, report())
    snapshot = activity.snapshot()
    assert snapshot["turnsLastMinute"] == 1  # the minute under way
    assert snapshot["turnsLastHour"] == 5
    assert snapshot["turnsByStatus"] == {"done": 4, "failed": 1}
    assert snapshot["failedTurnsLastHour"] == 1
    assert snapshot["errorsLastHour"] == 0  # a failed turn is counted by its status; what failed it logs its error
    assert snapshot["turnsPerMinute"] == 5.0  # a host up one minute: no dilution by the 15-minute window


async def test_the_rate_averages_over_the_window_once_it_has_passed() -> None:
    clock = FakeClock()
    activity = RecentActivity(clock)
    for _ in range(RATE_MINUTES * 2):
        await clock.advance(60)
        activity(KEY, report())  # one turn at the start of each minute
    assert activity.snapshot()["turnsPerMinute"] == 1.0
    assert activity.snapshot()["turnsLastHour"] == RATE_MINUTES * 2


async def test_what_is_older_than_an_hour_is_forgotten() -> None:
    clock = FakeClock()
    activity = RecentActivity(clock)
    activity(KEY, report("failed"))
    activity.error()
    assert (activity.snapshot()["errorsLastHour"], activity.snapshot()["failedTurnsLastHour"]) == (1, 1)
    await clock.advance(3600)
    snapshot = activity.snapshot()
    assert snapshot["errorsLastHour"] == snapshot["failedTurnsLastHour"] == 0
    assert snapshot["turnsLastHour"] == 0
    assert snapshot["turnsPerMinute"] == 0.0


async def test_the_ring_never_holds_more_than_an_hour_of_minutes() -> None:
    clock = FakeClock()
    activity = RecentActivity(clock)
    for _ in range(500):
        activity(KEY, report())
        await clock.advance(60)
    assert len(activity._minutes) <= 60


async def test_errors_are_what_is_logged_at_error_while_counting() -> None:
    activity = RecentActivity(FakeClock())
    logger = logging.getLogger("ishiki_host.test_activity")
    with activity.counting_errors(logger):
        logger.warning("a warning is not an error")
        logger.error("one")
        logger.getChild("deeper").critical("two")
        await anyio.to_thread.run_sync(lambda: logger.error("three, from a worker thread"))
    logger.error("after the block: not counted")
    assert activity.snapshot()["errorsLastHour"] == 3
