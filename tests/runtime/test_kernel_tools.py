"""The kernel tools in a real runtime: send_message, finish, wait, read."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.config.claims import compile_claims
from ishiki_host.config.profile_types import Profile, TypingConfig
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.testing import FakeConnection, RuntimeHarness
from ishiki_host.testing.agent import BusRecorder
from ishiki_host.testing.models import FunctionModel, ScriptedModel, reply, tool_call

pytestmark = pytest.mark.anyio


def results(rt: RuntimeHarness) -> list[dict[str, Any]]:
    """The tool results in the log, as (text, is_error) data."""
    return [e.data for e in rt.log.iter_forward() if e.data.get("role") == "tool"]


def profile(tmp_path: Path, **changes: Any) -> Profile:
    base = Profile(id="ana", directory=tmp_path, file=tmp_path / "profile.yml", persona="You are Ana.", model="m")
    return replace(base, **changes)


async def test_send_message_sends_each_string_as_one_message(tmp_path: Path) -> None:
    call = tool_call("send_message", {"messages": ["one", "two"], "reply_to": "m7"})
    model = ScriptedModel([reply("", call)])
    async with RuntimeHarness(tmp_path, model=model, kernel_tools=True) as rt:
        recorder = BusRecorder(rt.bus)
        outcome = await rt.say("hi")
        sent_events = [dict(e.data) for e in recorder.named("message.sent")]
        logged = results(rt)
    assert (outcome.status, outcome.reason) == ("done", "sent")
    assert [(m.channel_id, m.text, m.reply_to) for m in rt.channel.sent] == [
        ("private:local", "one", "m7"),
        ("private:local", "two", None),
    ]
    assert json.loads(logged[0]["parts"][0]["text"]) == {"ok": True, "ids": ["out-1", "out-2"]}
    assert sent_events[0] == {
        "channel_id": "private:local",
        "sid": "console:local",
        "ids": ["out-1"],
        "text": "one",
        "reply_to": "m7",
    }
    tools = [t.name for t in model.requests[0].tools]
    assert tools == ["read", "send_message", "finish", "wait"]


async def test_a_failed_send_reports_what_went_out_and_the_turn_goes_on(tmp_path: Path) -> None:
    def answer(request: ModelRequest) -> ModelResult:
        if request.messages[-1].role == "tool":
            return reply("", tool_call("finish", {"reason": "could not send"}))
        return reply("", tool_call("send_message", {"messages": ["first", "second"]}))

    async with RuntimeHarness(tmp_path, model=FunctionModel(answer), kernel_tools=True) as rt:
        rt.channel.fail_sends = [None, "the platform said no"]
        outcome = await rt.say("hi")
        logged = results(rt)
    assert (outcome.reason, outcome.steps) == ("finish", 2)
    assert logged[0]["is_error"] is True
    assert json.loads(logged[0]["parts"][0]["text"]) == {
        "ok": False,
        "error": "message 2 of 2: the platform said no",
        "sent": ["out-1"],
    }
    assert rt.channel.texts() == ["first"]


async def test_typing_delay_waits_on_the_clock_and_shows_typing(tmp_path: Path, fake_clock: FakeClock) -> None:
    text = "x" * 30  # 3 s at 10 chars/s, capped at 1.5 s
    model = ScriptedModel([reply("", tool_call("send_message", {"messages": [text]}))])
    typing = TypingConfig(chars_per_second=10, max_delay_ms=1500)
    async with (
        RuntimeHarness(
            tmp_path, model=model, clock=fake_clock, profile=profile(tmp_path, typing=typing), kernel_tools=True
        ) as rt,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(rt.say, "hi")
        await fake_clock.wait_for_sleepers()
        assert (rt.channel.typing, rt.channel.sent) == (["private:local"], [])
        assert fake_clock.next_deadline() == fake_clock.now() + 1.5
        await fake_clock.advance(1.5)
    assert rt.channel.texts() == [text]


async def test_wait_for_messages_starts_a_turn_after_the_nth(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("wait", {"messages": 2})), reply("", tool_call("finish", {}))])
    console = FakeConnection(platform="console", self_id="local")
    async with RuntimeHarness(tmp_path, model=model, kernel_tools=True) as rt:
        outcome = await rt.say("wait for two more")
        assert outcome.reason == "wait"
        assert rt._waiter.armed
        await rt.deliver(console.event("one", channel_id="private:local"))
        assert rt.agent.queued == 0
        await rt.deliver(console.event("two", channel_id="private:local"))
        await rt.settled()
        starts = [e.data for e in rt.log.iter_forward() if e.name == "turn.start"]
    assert not rt._waiter.armed
    assert starts[1]["triggers"] == [{"by": "continue", "messages": 2, "reason": "wait", "trust": "owner"}]
    assert [m.text for m in model.requests[1].messages[-2:]] == ["one", "two"]


async def test_wait_for_seconds_wakes_with_a_prompt(tmp_path: Path, fake_clock: FakeClock) -> None:
    model = ScriptedModel([reply("", tool_call("wait", {"seconds": 30})), reply("", tool_call("finish", {}))])
    async with RuntimeHarness(tmp_path, model=model, clock=fake_clock, kernel_tools=True) as rt:
        await rt.say("check back in half a minute")
        await fake_clock.wait_for_sleepers()
        await fake_clock.advance(29)
        assert rt.agent.queued == 0
        assert not rt.agent.busy
        await fake_clock.advance(1)
        await rt.settled()
        wake = [e.data for e in rt.log.iter_forward() if e.data.get("wake")]
    assert wake[0]["parts"][0]["text"] == "The 30 seconds you chose to wait have passed."


async def test_a_new_turn_clears_the_wait(tmp_path: Path, fake_clock: FakeClock) -> None:
    model = ScriptedModel([reply("", tool_call("wait", {"seconds": 30})), reply("", tool_call("finish", {}))])
    async with RuntimeHarness(tmp_path, model=model, clock=fake_clock, kernel_tools=True) as rt:
        await rt.say("later")
        assert rt._waiter.armed
        await (await rt.context.wake("something else happened"))
        assert not rt._waiter.armed
        await fake_clock.advance(60)
        await rt.settled()
        assert len(model.requests) == 2


async def test_read_refuses_a_path_out_of_the_runtime_home(tmp_path: Path) -> None:
    calls = [tool_call("read", {"url": "local://../../etc/passwd"}), tool_call("finish", {})]
    model = ScriptedModel([reply("", calls[0]), reply("", calls[1])])
    async with RuntimeHarness(tmp_path / "home", model=model, kernel_tools=True) as rt:
        await rt.say("read it")
        logged = results(rt)
    assert logged[0]["is_error"] is True
    assert logged[0]["parts"][0]["text"].startswith("read failed: invalid_resource_uri")
    assert "root:" not in logged[0]["parts"][0]["text"]


async def test_cross_mode_send_needs_a_claimed_target(tmp_path: Path) -> None:
    claims, _ = compile_claims({"fake:bot": ["group:*"]})
    cross = profile(tmp_path, mode="cross", claims=claims)
    targets = [
        {"sid": "fake:other", "channelId": "group:1"},
        {"sid": "fake:bot", "channelId": "private:9"},
        {"sid": "fake:bot", "channelId": "group:5"},
    ]
    model = ScriptedModel(
        [reply("", tool_call("send_message", {"messages": ["hi"], "target": t})) for t in targets]
        + [reply("", tool_call("finish", {}))]
    )
    async with RuntimeHarness(tmp_path, model=model, profile=cross, sid="fake:bot", kernel_tools=True) as rt:
        outcome = await rt.say("send it around")
        logged = [json.loads(r["parts"][0]["text"]) for r in results(rt)]
        schema = model.requests[0].tools[1].parameters
    assert rt.key.mode == "cross"
    assert schema["required"] == ["messages", "target"]
    assert logged[0]["error"] == "fake:other group:1 is not a channel profile 'ana' claims (fake:bot: group:*)"
    assert logged[1]["error"] == "fake:bot private:9 is not a channel profile 'ana' claims (fake:bot: group:*)"
    assert logged[2] == {"ok": True, "ids": ["out-1"]}
    assert [(m.channel_id, m.text) for m in rt.channel.sent] == [("group:5", "hi")]
    assert outcome.reason == "sent"
