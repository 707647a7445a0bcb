"""Beats on a real Host: a target's runtime speaks in its chat, failures wait for the next slot, beat turns get
no beat tools, set_beat from a model turn schedules a beat that then runs, untargeted beats call a model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, ScriptedCall, profile_yaml

pytestmark = pytest.mark.anyio

BeatHostFactory = Callable[..., Any]
TARGET = {"profile": "ana", "sid": "fake:bot", "channel": "private:7"}
ONE_TRY = "failover: {attempts: 1}\n"
HANG = 20.0


def speaker(server: FakeOpenAIServer, beat_text: str = "Time to stretch, your back will thank you.") -> None:
    """Beat prompts get ``beat_text`` sent; anything else gets "ok" sent."""

    def answer(request: RecordedRequest) -> Reply:
        text = beat_text if is_beat(request) else "ok"
        return Reply(tool_calls=(ScriptedCall("send_message", {"messages": [text]}),))

    server.default = answer


def is_beat(request: RecordedRequest) -> bool:
    users = [m for m in request.json["messages"] if m["role"] == "user"]
    content = users[-1]["content"] if users else ""
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    return text.startswith("[Scheduled ")


def names(request: RecordedRequest) -> set[str]:
    return {tool["function"]["name"] for tool in request.json.get("tools", ())}


async def test_a_targeted_beat_speaks_in_its_chat_through_the_channel(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer, beats_file: Any
) -> None:
    speaker(fake_openai)
    beat = {"id": "stretch", "text": "stand up and stretch", "cron": "0 9 * * *", "type": "reminder", "target": TARGET}
    async with beat_host(profiles={"ana": profile_yaml()}, files={"heartbeats.json": beats_file(beat)}) as bh:
        await bh.run_to(await bh.next_run("stretch"))
        bot = bh.th.channel()
        assert [(m.channel_id, m.text) for m in bot.sent] == [
            ("private:7", "Time to stretch, your back will thank you.")
        ]
        assert await bh.outcomes("stretch") == [("ok", "Time to stretch, your back will thank you.")]
        prompt = fake_openai.last_request.json["messages"][-1]
        assert "The reminder:\n> stand up and stretch" in str(prompt["content"])
        runtime = await bh.th.host.runtime_for("ana", "fake:bot", "private:7")
        starts = [e.data for e in runtime.context.log.tail(50) if e.data.get("name") == "turn.start"]
    assert starts[-1]["priority"] == "background"
    assert starts[-1]["triggers"] == [{"by": "continue", "heartbeat": "stretch", "reason": "wake"}]


async def test_a_failed_model_call_fails_the_run_and_the_beat_waits_for_its_next_slot(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer, beats_file: Any
) -> None:
    speaker(fake_openai, "Water the plants.")
    beat = {"id": "plants", "text": "water the plants", "cron": "0 9 * * *", "type": "reminder", "target": TARGET}
    files = {"heartbeats.json": beats_file(beat)}
    async with beat_host(profiles={"ana": profile_yaml(extra=ONE_TRY)}, files=files) as bh:
        first = await bh.next_run("plants")
        fake_openai.server_error(500)
        await bh.run_to(first)
        [(outcome, output)] = await bh.outcomes("plants")
        assert outcome == "failed"
        assert "failed" in (output or "")
        assert "ModelUnavailable" in (output or "")
        assert await bh.next_run("plants") == first + 86400  # no retry before the next slot
        await bh.run_to(first + 3600)
        assert len(await bh.outcomes("plants")) == 1
        await bh.run_to(first + 86400)
        assert [o for o, _ in await bh.outcomes("plants")] == ["failed", "ok"]
        assert bh.th.channel().texts() == ["Water the plants."]
    assert sum(is_beat(r) for r in fake_openai.requests) == 2


async def test_a_beats_own_turn_is_not_offered_beat_tools(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer, beats_file: Any
) -> None:
    speaker(fake_openai)
    beat = {"id": "daily", "text": "say good morning", "cron": "0 9 * * *", "type": "task", "target": TARGET}
    async with beat_host(profiles={"ana": profile_yaml()}, files={"heartbeats.json": beats_file(beat)}) as bh:
        delivery = await bh.th.channel().say("hello", channel_id="private:7")
        with anyio.fail_after(HANG):
            await delivery.settled()
        await bh.run_to(await bh.next_run("daily"))
        delivery = await bh.th.channel().say("and now?", channel_id="private:7")
        with anyio.fail_after(HANG):
            await delivery.settled()
    user_turn, beat_turn, next_user_turn = fake_openai.requests
    beat_tools = {"set_beat", "list_beats", "update_beat", "delete_beat"}
    assert (is_beat(user_turn), is_beat(beat_turn), is_beat(next_user_turn)) == (False, True, False)
    assert beat_tools <= names(user_turn)
    assert not beat_tools & names(beat_turn)
    assert {"send_message", "finish"} <= names(beat_turn)
    assert beat_tools <= names(next_user_turn)


async def test_set_beat_from_a_model_turn_makes_a_beat_the_scheduler_runs(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        last = request.json["messages"][-1]
        if is_beat(request):
            return Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["Call your mum!"]}),))
        if last["role"] == "tool":
            return Reply(tool_calls=(ScriptedCall("send_message", {"messages": [f"Done: {last['content']}"]}),))
        arguments = {"text": "call mum, it is her birthday", "cron": "30 14 15 11 *", "type": "reminder"}
        arguments["recurring"] = False
        return Reply(tool_calls=(ScriptedCall("set_beat", arguments),))

    fake_openai.default = answer
    async with beat_host(profiles={"ana": profile_yaml()}) as bh:
        delivery = await bh.th.channel().say("remind me to call mum tomorrow at 14:30", channel_id="private:7")
        with anyio.fail_after(HANG):
            await delivery.settled()
        [beat] = await bh.store.heartbeats.find(created_by="ana/fake:bot/private:7")
        assert (beat.managed, beat.recurring, beat.target) == (False, False, beat.target)
        assert beat.target is not None
        assert (beat.target.sid, beat.target.channel) == ("fake:bot", "private:7")
        assert bh.th.channel().texts()[0].startswith(f"Done: Set {beat.id}: one-time reminder")
        await bh.run_to(await bh.next_run(beat.id))
        assert bh.th.channel().texts()[1:] == ["Call your mum!"]
        assert await bh.store.heartbeats.get(beat.id) is None  # a spent one-time beat is deleted
        assert await bh.outcomes(beat.id) == [("ok", "Call your mum!")]


async def test_a_target_no_profile_claims_is_refused_with_the_reason(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer, beats_file: Any
) -> None:
    results: list[str] = []

    def answer(request: RecordedRequest) -> Reply:
        last = request.json["messages"][-1]
        if last["role"] == "tool":
            results.append(str(last["content"]))
            return Reply(tool_calls=(ScriptedCall("finish", {}),))
        target = {"profile": "ana", "channel": "group:elsewhere"}
        return Reply(tool_calls=(ScriptedCall("set_beat", {"text": "x", "cron": "0 9 * * *", "type": "task",
                                                            "target": target}),))  # fmt: skip

    fake_openai.default = answer
    wrong = {**TARGET, "profile": "bob"}
    files = {"heartbeats.json": beats_file({"id": "lost", "text": "t", "cron": "0 9 * * *", "type": "task",
                                            "target": wrong})}  # fmt: skip
    ana = profile_yaml("fake:bot: ['private:*']")
    async with beat_host(profiles={"ana": ana}, files=files) as bh:
        assert bh.service.last_sync is not None
        [error] = bh.service.last_sync.errors
        assert error.path == "[0]"
        assert error.message == "beat 'lost': target: there is no profile 'bob'"
        delivery = await bh.th.channel().say("remind the group", channel_id="private:7")
        with anyio.fail_after(HANG):
            await delivery.settled()
        assert [b.id for b in await bh.store.heartbeats.find()] == ["__clear_images__"]  # seeded; nothing else
    assert results == ["cannot speak at ana in fake:bot group:elsewhere: profile 'ana' does not claim channel "
                       "group:elsewhere of fake:bot"]  # fmt: skip


async def test_a_beat_without_a_target_is_a_background_call_on_its_makers_model(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        if is_beat(request):
            return Reply("Three new issues, none urgent.")
        if request.json["messages"][-1]["role"] == "tool":
            return Reply(tool_calls=(ScriptedCall("finish", {}),))
        arguments = {"text": "count the open issues", "cron": "0 8 * * *", "type": "task", "background": True}
        return Reply(tool_calls=(ScriptedCall("set_beat", arguments),))

    fake_openai.default = answer
    async with beat_host(profiles={"ana": profile_yaml()}) as bh:
        delivery = await bh.th.channel().say("count the issues every morning, quietly")
        with anyio.fail_after(HANG):
            await delivery.settled()
        [beat] = await bh.store.heartbeats.find(managed=False)
        assert beat.target is None
        await bh.run_to(await bh.next_run(beat.id))
        assert await bh.outcomes(beat.id) == [("ok", "Three new issues, none urgent.")]
        assert bh.th.channel().texts() == []
    request = fake_openai.last_request.json
    assert "tools" not in request or not request["tools"]
    assert request["messages"][0] == {"role": "system", "content": "You are ana, a test persona."}


async def test_a_file_beat_without_a_target_runs_on_heartbeat_model_or_fails_saying_why(
    beat_host: BeatHostFactory, fake_openai: FakeOpenAIServer, beats_file: Any
) -> None:
    fake_openai.default = Reply("All backups are fresh.")
    beat = {"id": "backups", "text": "check the backups", "cron": "0 6 * * *", "type": "task"}
    files = {"heartbeats.json": beats_file(beat)}
    host = "reload_interval_seconds: 0\nchannels:\n  fake:\n    accounts: [{self_id: bot}]\n"
    async with beat_host(profiles={"ana": profile_yaml()}, files=files, host=host) as bh:
        await bh.run_to(await bh.next_run("backups"))
        [(outcome, output)] = await bh.outcomes("backups")
    assert outcome == "failed"
    assert output == "BeatRunFailed: the beat has no target, ishiki.yaml sets no heartbeat.model to run it on"
    async with beat_host(
        profiles={"ana": profile_yaml()}, files=files, host=host + "heartbeat: {model: default}\n"
    ) as bh:
        await bh.run_to(await bh.next_run("backups"))
        assert await bh.outcomes("backups") == [("ok", "All backups are fresh.")]
