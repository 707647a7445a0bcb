"""``HeartbeatServiceAdmin`` on a real Host: user beats made, edited, paused, resumed and deleted run (or do
not) on the host's scheduler; every bad field is named; managed beats and unknown ids are refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from ishiki_host import BeatSpec, BeatTarget
from ishiki_host.errors import BeatInvalid, BeatRefused
from ishiki_host.heartbeat import HeartbeatServiceAdmin, admin_for
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml

pytestmark = pytest.mark.anyio

BeatHostFactory = Callable[..., Any]
TARGET = BeatTarget("ana", "fake:bot", "private:7")
TEA = BeatSpec("tea", "remind Ana of her tea", "reminder", "0 16 * * *", target=TARGET)
FILE_BEAT = {"id": "stretch", "text": "stand up", "cron": "0 9 * * *", "type": "reminder"}
PROFILES = {"ana": profile_yaml(), "bo": profile_yaml("fake:bot2: ['*']")}


@pytest.fixture
def speaking(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_openai.default = lambda request: Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["Tea!"]}),))
    return fake_openai


def admin(bh: Any) -> HeartbeatServiceAdmin:
    return admin_for(bh.service)


async def test_a_beat_made_here_runs_when_due_and_records_its_maker(
    beat_host: BeatHostFactory, speaking: FakeOpenAIServer
) -> None:
    async with beat_host(profiles=PROFILES) as bh:
        beat = await admin(bh).create(TEA, created_by="dashboard:ana")
        assert beat.next_run is not None
        await bh.run_to(beat.next_run)
        runs = await admin(bh).runs("tea")
        sent = [(m.channel_id, m.text) for m in bh.th.channel().sent]
    assert (beat.created_by, beat.managed, beat.paused) == ("dashboard:ana", False, False)
    assert [r.outcome for r in runs] == ["ok"]
    assert sent == [("private:7", "Tea!")]


async def test_a_paused_beat_does_not_run_when_due_and_runs_again_after_resume(
    beat_host: BeatHostFactory, speaking: FakeOpenAIServer
) -> None:
    async with beat_host(profiles=PROFILES) as bh:
        hb = admin(bh)
        made = await hb.create(TEA, created_by="dashboard:ana")
        assert made.next_run is not None
        paused = await hb.pause("tea")
        await bh.run_to(made.next_run)
        assert await hb.runs("tea") == []
        assert hb.paused(paused)
        resumed = await hb.resume("tea")
        assert not hb.paused(resumed)
        assert resumed.next_run == made.next_run + 86400  # from now: the slot missed while paused is not run
        await bh.run_to(resumed.next_run)
        outcomes = [r.outcome for r in await hb.runs("tea")]
    assert outcomes == ["ok"]


async def test_an_update_follows_the_new_schedule_and_keeps_the_next_run_otherwise(
    beat_host: BeatHostFactory,
) -> None:
    async with beat_host(profiles=PROFILES) as bh:
        hb = admin(bh)
        made = await hb.create(TEA, created_by="dashboard:ana")
        reworded = await hb.update(dataclasses.replace(TEA, text="green tea, this time"))
        moved = await hb.update(dataclasses.replace(TEA, cron="0 17 * * *"))
    assert made.next_run is not None
    assert (reworded.text, reworded.next_run) == ("green tea, this time", made.next_run)
    assert moved.next_run == made.next_run + 3600


async def test_a_deleted_beat_is_gone_and_its_runs_stay(beat_host: BeatHostFactory, speaking: FakeOpenAIServer) -> None:
    async with beat_host(profiles=PROFILES) as bh:
        hb = admin(bh)
        made = await hb.create(TEA, created_by="dashboard:ana")
        assert made.next_run is not None
        await bh.run_to(made.next_run)
        await hb.delete("tea")
        assert await hb.get("tea") is None
        assert [b.id for b in await hb.beats()] == ["__clear_images__"]
        assert [r.outcome for r in await hb.runs("tea")] == ["ok"]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"cron": "61 * * * *"}, "cron", "cron '61 * * * *': bad minute field '61'"),
        ({"cron": "0 9 * *"}, "cron", "expected 5 fields"),
        ({"recurring": False}, "cron", "one-time cron '0 16 * * *' would fire more than once"),
        ({"timezone": "Mars/Olympus"}, "timezone", "unknown time zone 'Mars/Olympus'"),
        ({"target": BeatTarget("bo", "fake:bot", "private:7")}, "target", "belongs to profile 'ana', not 'bo'"),
        ({"target": BeatTarget("cy", "fake:bot", "private:7")}, "target", "there is no profile 'cy'"),
        ({"target": BeatTarget("ana", "", "private:7")}, "target", "a target needs profile, sid and channel"),
        ({"text": "  "}, "text", "text is empty"),
        ({"type": "alarm"}, "type", "type 'alarm' is not one of reminder, task"),
        ({"id": ""}, "id", "a beat needs an id"),
        ({"id": "__clear_images__"}, "id", "are the host's own"),
        ({"trust": "root"}, "trust", "trust 'root' is not one of"),
    ],
)
async def test_a_bad_field_is_named(
    beat_host: BeatHostFactory, change: dict[str, Any], field: str, message: str
) -> None:
    async with beat_host(profiles=PROFILES) as bh:
        with pytest.raises(BeatInvalid) as bad:
            await admin(bh).create(dataclasses.replace(TEA, **change), created_by="dashboard:ana")
        assert [b.id for b in await admin(bh).beats()] == ["__clear_images__"]
    assert bad.value.field == field
    assert message in str(bad.value)


async def test_an_id_in_use_is_a_bad_id_and_an_update_is_checked_too(beat_host: BeatHostFactory) -> None:
    async with beat_host(profiles=PROFILES) as bh:
        hb = admin(bh)
        await hb.create(TEA, created_by="dashboard:ana")
        with pytest.raises(BeatInvalid, match="id 'tea' is taken") as taken:
            await hb.create(TEA, created_by="dashboard:bo")
        with pytest.raises(BeatInvalid) as bad_cron:
            await hb.update(dataclasses.replace(TEA, cron="not a cron"))
        kept = await hb.get("tea")
    assert taken.value.field == "id"
    assert bad_cron.value.field == "cron"
    assert kept is not None
    assert (kept.cron, kept.created_by) == ("0 16 * * *", "dashboard:ana")


async def test_a_managed_beat_is_read_only_and_names_its_file(
    beat_host: BeatHostFactory, beats_file: Callable[..., str]
) -> None:
    async with beat_host(profiles=PROFILES, files={"heartbeats.json": beats_file(FILE_BEAT)}) as bh:
        hb = admin(bh)
        stretch = await hb.get("stretch")
        assert stretch is not None
        attempts = [
            hb.update(dataclasses.replace(stretch.spec, text="sit down")),
            hb.pause("stretch"),
            hb.resume("stretch"),
            hb.delete("stretch"),
        ]
        for attempt in attempts:
            with pytest.raises(BeatRefused, match=r"beat 'stretch' comes from .*heartbeats\.json; change it there"):
                await attempt
        with pytest.raises(BeatRefused, match=r"comes from ishiki\.yaml"):
            await hb.pause("__clear_images__")
        after = await hb.get("stretch")
        source = hb.source(stretch)
    assert after == stretch
    assert source == str(bh.th.root / "heartbeats.json")


async def test_an_unknown_id_is_refused(beat_host: BeatHostFactory) -> None:
    async with beat_host(profiles=PROFILES) as bh:
        hb = admin(bh)
        for attempt in (hb.update(TEA), hb.pause("tea"), hb.resume("tea"), hb.delete("tea")):
            with pytest.raises(BeatRefused, match="there is no beat 'tea'"):
                await attempt
        assert await hb.get("tea") is None
