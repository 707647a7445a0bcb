"""``BeatReminders``: a reminder becomes a one-time beat for its minute, or a refusal a person can read."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from ishiki_host import Reminder, Target, TrustLevel
from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import HeartbeatInvalid
from ishiki_host.heartbeat import BeatReminders, HeartbeatService, one_time_cron
from ishiki_host.store import BeatSpec, BeatTarget, MemoryStore

pytestmark = pytest.mark.anyio

TZ = "Europe/Berlin"
MAKER = "ana/fake:bot/private:7"
HERE = Target("fake:bot", "private:7")


@pytest.fixture
def reminders(store: MemoryStore, runner: Any, tmp_path: Path, fake_clock: FakeClock) -> Callable[..., BeatReminders]:
    """``reminders(refuse=None, max_beats=100)``: on a service (never started) whose targets ``refuse`` says."""

    def make(refuse: str | None = None, max_beats: int = 100) -> BeatReminders:
        service = HeartbeatService(
            store, runner, config_dir=tmp_path, data_dir=tmp_path, default_tz=TZ, clock=fake_clock,
            target_validator=lambda target: refuse,
        )  # fmt: skip
        return BeatReminders(service, max_beats=max_beats)

    return make


def wall(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(TZ))


def asked(beat_id: str, due: datetime, *, trust: TrustLevel = "trusted", asked_at: float | None = None) -> Reminder:
    return Reminder(beat_id, "Remind Ana to stretch.", due, "ana", HERE, trust, MAKER, asked_at)


async def at_time(clock: FakeClock, text: str) -> None:
    await clock.advance(wall(text).timestamp() - clock.now())


def test_the_cron_of_one_minute() -> None:
    assert one_time_cron(wall("2026-12-04 18:05")) == "5 18 4 12 *"


async def test_a_time_in_a_spring_forward_gap_fires_at_the_first_minute_after_it(
    reminders: Callable[..., BeatReminders], store: MemoryStore, fake_clock: FakeClock
) -> None:
    await at_time(fake_clock, "2027-03-20 10:00")
    done = await reminders().schedule(asked("r-1", datetime(2027, 3, 28, 2, 30)))  # naive: a wall time in TZ
    assert done.at == wall("2027-03-28 03:00").timestamp()  # 02:30 does not exist that night (Debian cron)
    beat = await store.heartbeats.get("r-1")
    assert beat is not None
    assert (beat.cron, beat.timezone, beat.recurring, beat.target) == (
        "30 2 28 3 *", TZ, False, BeatTarget("ana", "fake:bot", "private:7"),
    )  # fmt: skip


async def test_refusals_say_why(reminders: Callable[..., BeatReminders], fake_clock: FakeClock) -> None:
    await at_time(fake_clock, "2026-11-30 10:00")
    friday = wall("2026-12-04 18:00")
    with pytest.raises(HeartbeatInvalid, match="only trusted people may set reminders here"):
        await reminders().schedule(asked("r-1", friday, trust="untrusted"))
    with pytest.raises(HeartbeatInvalid, match="I cannot speak in ana in fake:bot private:7: not yours"):
        await reminders(refuse="not yours").schedule(asked("r-1", friday))
    full = reminders(max_beats=1)
    await full.schedule(asked("r-1", friday))
    with pytest.raises(HeartbeatInvalid, match="this chat already has 1 beats"):
        await full.schedule(asked("r-2", wall("2026-12-05 18:00")))


async def test_only_a_beat_set_since_the_request_stands_for_it(
    reminders: Callable[..., BeatReminders], store: MemoryStore, fake_clock: FakeClock
) -> None:
    await at_time(fake_clock, "2026-11-30 10:00")
    friday = wall("2026-12-04 18:00")
    target = BeatTarget("ana", "fake:bot", "private:7")
    earlier = BeatSpec("b-000001", "take the pills", "reminder", "0 18 4 12 *", TZ, target, False, "trusted")
    await store.heartbeats.add(earlier, next_run=friday.timestamp(), created_by=MAKER)
    await fake_clock.advance(60)
    asked_at = fake_clock.now()
    first = await reminders().schedule(asked("r-1", friday, asked_at=asked_at))
    assert (first.id, first.new) == ("r-1", True)  # the pills were set before: a reminder of its own
    await fake_clock.advance(1)
    own = BeatSpec("b-000002", "stretch", "reminder", "0 18 5 12 *", TZ, target, False, "trusted")
    await store.heartbeats.add(own, next_run=wall("2026-12-05 18:00").timestamp(), created_by=MAKER)
    second = await reminders().schedule(asked("r-2", wall("2026-12-05 18:00"), asked_at=asked_at))
    assert (second.id, second.new) == ("b-000002", False)  # the persona's set_beat in that turn
    assert await store.heartbeats.get("r-2") is None
