"""Reminder memories become one-shot beats (issue 20, item 11), on a real Host with memory and heartbeats.

"remind me to call mom on Friday at 18:00": the condense answer is a ``reminder`` with a ``when``; the host
makes beat ``r-<memory id>`` in that chat at the turn's level, confirms it in a notice, recalls the reminder
while it is to come, and at 18:00 on Friday the beat's turn speaks in that chat. Whatever is wrong with the
time or the chat, the memory is kept, no beat is made, the log and a notice say why, nothing crashes.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import anyio
import pytest

from ishiki_host import Target
from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import HeartbeatInvalid
from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.memory.reminders import NO_HEARTBEATS_NOTICE, NO_TIME_NOTICE
from ishiki_host.plugins.discovery import PluginRegistry
from ishiki_host.plugins.reminders import REMINDERS, Reminder
from ishiki_host.testing import Reply, ScriptedCall

if TYPE_CHECKING:
    from ishiki_host.runtime.runtime import AgentRuntime
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.testing.host import TestHost

pytestmark = pytest.mark.anyio

MemoryHost = Any  # the fixtures of conftest.py
Router = Any
Settle = Any

TZ = "Europe/Berlin"
HOST = f"timezone: {TZ}\n"
OWNERS = "trust: {owners: ['fake:42']}\n"
CHAT = "private:7"
ASK = "remind me to call mom on Friday at 18:00"
TEXT = "Remind Ana to call her mother."
HANG = 20.0


def at(text: str) -> float:
    """Epoch seconds of a Berlin wall time ``YYYY-MM-DD HH:MM``."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(TZ)).timestamp()


NOW = at("2026-11-30 10:00")  # a Monday


def reminder(when: object = "2026-12-04T18:00", **extra: object) -> Reply:
    """A condense answer: a reminder of ``TEXT`` due ``when`` (left out when ``...``)."""
    body: dict[str, object] = {"type": "reminder", "content": TEXT, **extra}
    if when is not ...:
        body["when"] = when
    return Reply(json.dumps(body))


def runtime_of(delivery: object) -> AgentRuntime:
    assert isinstance(delivery, RuntimeDelivery), delivery
    return delivery.runtime


def store_of(th: TestHost) -> MemoryStore:
    store = th.host.services.memory
    assert store is not None
    return store


def host(memory_host: MemoryHost, **options: Any) -> TestHost:
    return memory_host(host_extra=HOST, clock=FakeClock(NOW), **options)


async def ask(th: TestHost, settle: Settle, text: str = ASK, **fields: Any) -> AgentRuntime:
    runtime = runtime_of(await th.channel().say(text, channel_id=CHAT, **fields))
    await settle(runtime)
    return runtime


async def run_beats_to(th: TestHost, when: float) -> None:
    """Move the host's clock to ``when`` and let its heartbeat scheduler deal with what is due."""
    service = th.host.heartbeats
    assert service is not None
    clock = th.clock
    assert isinstance(clock, FakeClock)
    with anyio.fail_after(HANG):
        await service.scheduler.settled()
        await clock.advance(when - clock.now())
        await service.scheduler.settled()


async def test_a_reminder_becomes_a_beat_that_speaks_in_its_chat_when_due(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    router.memories.append(reminder())
    async with host(memory_host) as th:
        runtime = await ask(th, settle)
        store = store_of(th)
        [memory] = await store.memories.latest("ana", trust="owner")
        assert (memory.type, memory.content) == ("reminder", TEXT)
        condense = router.requests("condense")[0]["messages"][-1]["content"]
        assert condense.startswith("It is now Monday 2026-11-30 10:00 (Europe/Berlin).\n<exchange>\n")

        beat = await store.heartbeats.get(f"r-{memory.id}")
        assert beat is not None
        assert (beat.type, beat.text, beat.recurring, beat.cron, beat.timezone) == (
            "reminder", TEXT, False, "0 18 4 12 *", TZ,
        )  # fmt: skip
        assert beat.next_run == at("2026-12-04 18:00")
        assert (beat.target.profile, beat.target.sid, beat.target.channel) == ("ana", "fake:bot", CHAT)  # type: ignore[union-attr]
        assert (beat.trust, beat.created_by) == ("trusted", str(runtime.key))
        assert th.channel().texts(CHAT) == [
            f"re: {ASK}",
            f"Reminder set for Fri 2026-12-04 18:00 (Europe/Berlin): {TEXT}",
        ]
        await th.channel().say("/beats", channel_id=CHAT)
        assert f"r-{memory.id}: one-time reminder, cron '0 18 4 12 *'" in th.channel().texts(CHAT)[-1]

        # Recalled in a later session of that chat while the beat is to come; not once it was given.
        await th.channel().say("/clear", channel_id=CHAT)
        await ask(th, settle, "what about my mother?")
        assert TEXT in router.requests()[-1]["messages"][0]["content"]

        router.turns.append(Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["Ana, call your mother!"]}),)))
        await run_beats_to(th, at("2026-12-04 18:00"))
        runtime = await th.host.runtime_for("ana", "fake:bot", CHAT)  # days idle: the beat spawned it again
        await settle(runtime)
        assert th.channel().texts(CHAT)[-1] == "Ana, call your mother!"
        beat_turn = router.requests()[-1]["messages"][-1]["content"]
        assert beat_turn.startswith(f"[Scheduled reminder 'r-{memory.id}', due Fri 2026-12-04 18:00 CET; it runs once]")
        assert f"The reminder:\n> {TEXT}" in beat_turn
        starts = [e.data for e in runtime.context.log.iter_forward() if e.name == "turn.start"]
        assert starts[-1]["triggers"][0]["heartbeat"] == f"r-{memory.id}"
        assert starts[-1]["triggers"][0]["trust"] == "trusted"
        assert await store.heartbeats.get(f"r-{memory.id}") is None  # spent
        assert [(r.outcome, r.output) for r in await store.heartbeats.runs(f"r-{memory.id}")] == [
            ("ok", "Ana, call your mother!")
        ]

        await th.channel().say("/clear", channel_id=CHAT)
        await ask(th, settle, "what about my mother?")
        assert TEXT not in router.requests()[-1]["messages"][0]["content"]
        assert router.count("condense") == 4  # the beat's turn was remembered too, and set nothing
        assert len(await store.heartbeats.find(managed=False)) == 0


BAD_TIMES = [
    pytest.param(None, NO_TIME_NOTICE, id="null"),
    pytest.param(..., NO_TIME_NOTICE, id="left-out"),
    pytest.param("Friday evening", NO_TIME_NOTICE, id="words"),
    pytest.param("2026-12-04", NO_TIME_NOTICE, id="a-day-without-a-time"),
    pytest.param("2026-13-04T18:00", NO_TIME_NOTICE, id="a-13th-month"),
    pytest.param(1764867600, NO_TIME_NOTICE, id="a-number"),
    pytest.param({"day": "friday"}, NO_TIME_NOTICE, id="an-object"),
    pytest.param("2026-11-27T18:00", "(No reminder set: Fri 2026-11-27 18:00 CET has passed.)", id="past"),
    pytest.param("2026-11-30T10:00", "(No reminder set: Mon 2026-11-30 10:00 CET has passed.)", id="this-minute"),
    pytest.param(
        "2027-12-24T09:00",
        "(No reminder set: Fri 2027-12-24 09:00 CET is a year or more away; reminders fire within a year.)",
        id="far",
    ),
    pytest.param(
        "2027-11-30T18:00",
        "(No reminder set: Tue 2027-11-30 18:00 CET is a year or more away; reminders fire within a year.)",
        id="same-day-next-year",
    ),
]


@pytest.mark.parametrize(("when", "notice"), BAD_TIMES)
async def test_a_reminder_without_a_usable_time_is_kept_without_a_beat(
    memory_host: MemoryHost, router: Router, settle: Settle, caplog: pytest.LogCaptureFixture, when: object,
    notice: str,
) -> None:  # fmt: skip
    router.memories.append(reminder(when))
    with caplog.at_level(logging.INFO):
        async with host(memory_host) as th:
            await ask(th, settle)
            store = store_of(th)
            [memory] = await store.memories.latest("ana", trust="owner")
            assert (memory.type, memory.content) == ("reminder", TEXT)
            assert await store.heartbeats.find(managed=False) == []
            assert th.channel().texts(CHAT) == [f"re: {ASK}", notice]
    assert f"reminder {memory.id}" in caplog.text


async def test_an_untrusted_senders_reminder_sets_no_beat(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    router.memories.append(reminder())
    async with host(memory_host, extra=OWNERS) as th:
        await ask(th, settle, user_id="3")
        store = store_of(th)
        [memory] = await store.memories.latest("ana", trust="untrusted")
        assert (memory.type, memory.min_trust) == ("reminder", "untrusted")
        assert await store.heartbeats.find(managed=False) == []
        assert th.channel().texts(CHAT)[-1] == "(No reminder set: only trusted people may set reminders here.)"


async def test_a_profile_with_heartbeats_off_gets_no_beat(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    router.memories.append(reminder())
    async with host(memory_host, extra="extends:\n  heartbeat: {enable: false}\n") as th:
        await ask(th, settle)
        assert await store_of(th).heartbeats.find(managed=False) == []
        assert th.channel().texts(CHAT)[-1] == (
            "(No reminder set: I cannot speak in ana in fake:bot private:7: profile 'ana' turns heartbeats off "
            "(extends: {heartbeat: {enable: false}}).)"
        )
        assert await store_of(th).memories.count("ana") == 1


async def test_a_chat_the_profile_no_longer_claims_is_refused(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with host(memory_host) as th:
        await ask(th, settle, "hello")
        profile = th.root / "profiles" / "ana" / "profile.yml"
        text = profile.read_text(encoding="utf-8")
        profile.write_text(text.replace("fake:bot: ['*']", "fake:bot: ['private:8']"), encoding="utf-8")
        await th.host.reload()
        reminders = th.host.services.get(REMINDERS)
        assert reminders is not None
        due = datetime(2026, 12, 4, 18, 0, tzinfo=ZoneInfo(TZ))
        request = Reminder("r-9", TEXT, due, "ana", Target("fake:bot", CHAT), "trusted", f"ana/fake:bot/{CHAT}")
        with pytest.raises(HeartbeatInvalid, match="profile 'ana' does not claim channel private:7 of fake:bot"):
            await reminders.schedule(request)
        assert await store_of(th).heartbeats.find(managed=False) == []


async def test_the_personas_own_beat_for_that_minute_is_not_doubled(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    set_beat = {"text": "call mom", "cron": "0 18 4 12 *", "type": "reminder", "recurring": False}
    router.turns.extend([
        Reply(tool_calls=(ScriptedCall("set_beat", set_beat),)),
        Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["Done, I will remind you."]}),)),
    ])  # fmt: skip
    router.memories.append(reminder())
    async with host(memory_host) as th:
        await ask(th, settle)
        beats = await store_of(th).heartbeats.find(managed=False)
        assert [(b.id.startswith("b-"), b.text, b.next_run) for b in beats] == [
            (True, "call mom", at("2026-12-04 18:00"))
        ]
        assert th.channel().texts(CHAT) == ["Done, I will remind you."]  # no second confirmation


async def test_without_the_heartbeat_extension_the_reminder_is_kept_and_the_chat_told(
    memory_host: MemoryHost, router: Router, settle: Settle, caplog: pytest.LogCaptureFixture
) -> None:
    router.memories.append(reminder())
    th = host(memory_host)
    th.registry = PluginRegistry([r for r in th.registry.records if r.full_name != "ishiki.ext.heartbeat"])
    async with th:
        assert th.host.heartbeats is None
        await ask(th, settle)
        [memory] = await store_of(th).memories.latest("ana", trust="owner")
        assert memory.type == "reminder"
        assert th.channel().texts(CHAT) == [f"re: {ASK}", NO_HEARTBEATS_NOTICE]
    assert f"reminder {memory.id} kept, but this host runs no heartbeats" in caplog.text


async def test_without_a_memory_database_a_reminder_request_is_just_answered(
    memory_host: MemoryHost, router: Router, settle: Settle, caplog: pytest.LogCaptureFixture
) -> None:
    router.memories.append(reminder())
    th = host(memory_host)
    db = th.root / "data" / "memory.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database, it is a shopping list\n")
    with caplog.at_level(logging.WARNING):
        async with th:
            await ask(th, settle)
            assert th.host.services.get(REMINDERS) is None
            assert th.channel().texts(CHAT) == [f"re: {ASK}"]
    assert router.count("condense") == 0
    assert "without long-term memory" in caplog.text
