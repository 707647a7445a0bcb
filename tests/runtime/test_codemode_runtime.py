"""codemode in a real runtime: the surface, programs that call real tools through the agent's dispatch, trust,
direct-only tools, sends inside programs, limits from the profile."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host import Tool
from ishiki_host.channels.inbound import inbound_message
from ishiki_host.config.profile_types import CodemodeConfig, Profile, TrustConfig
from ishiki_host.core.hooks import AgentHooks, Block
from ishiki_host.core.messages import ToolCall
from ishiki_host.core.model import ModelRequest
from ishiki_host.core.tools import ToolContext, ToolResult
from ishiki_host.core.turns import Step
from ishiki_host.testing import EveryMessageWakeup, FakeConnection, RuntimeHarness
from ishiki_host.testing.models import ScriptedModel, reply, tool_call

pytestmark = pytest.mark.anyio


ON = CodemodeConfig()


def profile(tmp_path: Path, codemode: CodemodeConfig | None = ON, **changes: Any) -> Profile:
    base = Profile(id="ana", directory=tmp_path, file=tmp_path / "profile.yml", persona="You are Ana.", model="m")
    return replace(base, codemode=codemode, **changes)


def names(request: ModelRequest) -> list[str]:
    return [spec.name for spec in request.tools]


def description(request: ModelRequest, name: str = "codemode") -> str:
    return next(spec.description for spec in request.tools if spec.name == name)


def tool_results(rt: RuntimeHarness) -> list[dict[str, Any]]:
    return [e.data for e in rt.log.iter_forward() if e.data.get("role") == "tool"]


def result_text(data: Mapping[str, Any]) -> str:
    return str(data["parts"][0]["text"])


def program(code: str) -> ToolCall:
    return tool_call("codemode", {"code": code})


class Trip:
    """Three tools; ``weather`` and ``events`` each wait for the other to have started (only concurrent calls end)."""

    def __init__(self) -> None:
        self.started = {"weather": anyio.Event(), "events": anyio.Event()}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def _meet(self, me: str, other: str) -> None:
        self.started[me].set()
        with anyio.fail_after(10):
            await self.started[other].wait()

    async def weather(self, args: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
        self.calls.append(("weather", dict(args)))
        await self._meet("weather", "events")
        return {"city": args["city"], "rain": True}

    async def events(self, args: Mapping[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        self.calls.append(("events", dict(args)))
        await self._meet("events", "weather")
        return [{"title": "Picnic", "outdoor": True}, {"title": "Museum", "outdoor": False}]

    async def plan(self, args: Mapping[str, Any], ctx: ToolContext) -> str:
        self.calls.append(("plan", dict(args)))
        return f"{len(args['titles'])} plans, rain={args['rain']}"

    def tools(self) -> list[Tool]:
        city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        day = {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}
        plan = {
            "type": "object",
            "properties": {"titles": {"type": "array", "items": {"type": "string"}}, "rain": {"type": "boolean"}},
            "required": ["titles", "rain"],
        }
        return [
            Tool("weather", "The weather in a city.", self.weather, city),
            Tool("events", "Events of a day.", self.events, day),
            Tool("plan", "Plan a day from event titles.", self.plan, plan),
        ]


THREE_TOOLS = """
const [weather, events] = await Promise.all([
  tools.weather({ city: "Kyoto" }),
  tools.events({ day: "mon" }),
]);
const outdoor = events.filter((e) => e.outdoor).map((e) => e.title);
const plan = await tools.plan({ titles: outdoor, rain: weather.rain });
return { day: { weather, outdoor: { titles: outdoor, count: outdoor.length } }, plan };
"""


async def test_the_model_sees_codemode_and_the_direct_tools_and_the_others_only_as_signatures(tmp_path: Path) -> None:
    trip = Trip()
    model = ScriptedModel([reply("", tool_call("finish", {}))])
    async with RuntimeHarness(
        tmp_path, model=model, profile=profile(tmp_path), extra_tools=trip.tools(), kernel_tools=True
    ) as rt:
        await rt.say("plan my day")
    request = model.requests[0]
    assert names(request) == ["send_message", "finish", "wait", "codemode"]
    described = description(request)
    for name in ("weather", "events", "plan", "read", "send_message"):
        assert f"tools.{name}(input" in described
    assert "tools.weather(input: { city: string }): Promise<unknown>" in described
    assert "tools.finish" not in described
    assert "tools.wait" not in described
    assert "through the codemode tool" in request.messages[0].text


async def test_a_program_composes_three_tools_two_at_once_and_returns_nested_data(tmp_path: Path) -> None:
    trip = Trip()
    model = ScriptedModel([reply("", program(THREE_TOOLS)), reply("", tool_call("finish", {}))])
    async with RuntimeHarness(
        tmp_path, model=model, profile=profile(tmp_path), extra_tools=trip.tools(), kernel_tools=True
    ) as rt:
        outcome = await rt.say("plan my day")
        results = tool_results(rt)
    assert outcome.reason == "finish"
    assert json.loads(result_text(results[0])) == {
        "day": {"weather": {"city": "Kyoto", "rain": True}, "outdoor": {"titles": ["Picnic"], "count": 1}},
        "plan": "1 plans, rain=True",
    }
    assert not results[0].get("is_error")
    assert sorted(name for name, _ in trip.calls[:2]) == ["events", "weather"]
    assert trip.calls[2] == ("plan", {"titles": ["Picnic"], "rain": True})
    # The program's calls are not model messages: the log holds the codemode call and its result only.
    assert len(results) == 2


async def test_calls_inside_programs_are_checked_against_the_tools_schema(tmp_path: Path) -> None:
    trip = Trip()
    code = "try { await tools.weather({ town: 'Kyoto' }); } catch (e) { return e.message; }"
    model = ScriptedModel([reply("", program(code)), reply("", tool_call("finish", {}))])
    async with RuntimeHarness(
        tmp_path, model=model, profile=profile(tmp_path), extra_tools=trip.tools(), kernel_tools=True
    ) as rt:
        await rt.say("weather?")
        answer = json.loads(result_text(tool_results(rt)[0]))
    assert (
        answer == "tools.weather failed: ToolError: invalid arguments for weather: at $: 'city' is a required property"
    )
    assert trip.calls == []


class Recorder(AgentHooks):
    """Sees every call the agent dispatches; blocks ``plan``."""

    def __init__(self) -> None:
        self.before: list[str] = []
        self.after: list[tuple[str, str]] = []

    async def before_tool_call(self, call: ToolCall, step: Step) -> Block | None:
        self.before.append(call.name)
        return Block("plans are off today") if call.name == "plan" else None

    async def after_tool_call(self, call: ToolCall, result: ToolResult, step: Step) -> ToolResult:
        self.after.append((call.id, call.name))
        return result


async def test_calls_inside_programs_go_through_the_agents_hooks(tmp_path: Path) -> None:
    trip = Trip()
    recorder = Recorder()
    code = "try { await tools.plan({ titles: [], rain: false }); } catch (e) { return e.message; }"
    model = ScriptedModel([reply("", program(code)), reply("", tool_call("finish", {}))])
    async with RuntimeHarness(
        tmp_path,
        model=model,
        profile=profile(tmp_path),
        extra_tools=trip.tools(),
        kernel_tools=True,
        hooks=[recorder],
    ) as rt:
        await rt.say("plan")
        answer = json.loads(result_text(tool_results(rt)[0]))
    assert answer == "tools.plan failed: ToolError: blocked: plans are off today"
    assert recorder.before == ["codemode", "plan", "finish"]
    outer = model.requests[0]  # the nested call's id names the codemode call that made it
    assert recorder.after[0][1] == "plan"
    assert recorder.after[0][0].endswith("/1")
    assert trip.calls == []
    assert outer is not None


async def secret(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return "the owner's diary"


SECRET = Tool("secret", "Read the owner's diary.", secret, trust="owner")
STRICT = TrustConfig(owners=("fake:1",))


async def test_a_tool_above_the_turns_trust_is_neither_listed_nor_callable_in_programs(tmp_path: Path) -> None:
    code = "try { return await tools.secret({}); } catch (e) { return 'refused: ' + e.message; }"
    model = ScriptedModel([reply("", program(code)), reply("", tool_call("finish", {}))])
    stranger = FakeConnection(platform="fake", self_id="bot")
    async with RuntimeHarness(
        tmp_path,
        model=model,
        profile=profile(tmp_path, trust=STRICT),
        sid="fake:bot",
        channel_id="group:7",
        extra_tools=[SECRET],
        kernel_tools=True,
        wakeup=EveryMessageWakeup(),
    ) as rt:
        await rt.deliver(stranger.event("read me the diary", channel_id="group:7", user_id="99"))
        with anyio.fail_after(20):
            await rt.settled()
        answer = json.loads(result_text(tool_results(rt)[0]))
    assert "tools.secret" not in description(model.requests[0])
    assert answer == "refused: not a function"


async def test_a_lower_trust_mid_turn_takes_the_tool_out_of_programs_from_the_next_step(tmp_path: Path) -> None:
    stranger = FakeConnection(platform="fake", self_id="bot")
    owner_turn: list[RuntimeHarness] = []

    async def let_a_stranger_in(args: Mapping[str, Any], ctx: ToolContext) -> str:
        rt = owner_turn[0]
        event = stranger.event("me too", channel_id="group:7", user_id="99")
        await rt.agent.send(inbound_message(event, rt._tracker.sender_level(event), []), if_busy="join")
        return "ok"

    code = "try { return await tools.secret({}); } catch (e) { return 'refused: ' + e.message; }"
    model = ScriptedModel(
        [reply("", program("return await tools.door({});")), reply("", program(code)), reply("", tool_call("finish"))]
    )
    door = Tool("door", "Open the door.", let_a_stranger_in)
    async with RuntimeHarness(
        tmp_path,
        model=model,
        profile=profile(tmp_path, trust=STRICT),
        sid="fake:bot",
        channel_id="group:7",
        extra_tools=[SECRET, door],
        kernel_tools=True,
        wakeup=EveryMessageWakeup(),
    ) as rt:
        owner_turn.append(rt)
        await rt.deliver(stranger.event("diary please", channel_id="group:7", user_id="1"))
        with anyio.fail_after(20):
            await rt.settled()
        answers = [json.loads(result_text(r)) for r in tool_results(rt)[:2]]
    assert "tools.secret" in description(model.requests[0])
    assert "tools.secret" not in description(model.requests[1])
    assert answers == ["ok", "refused: not a function"]


async def test_a_call_dispatched_for_a_tool_above_the_turns_trust_is_blocked(tmp_path: Path) -> None:
    records: list[Any] = []
    harness: list[RuntimeHarness] = []

    async def sneak(args: Mapping[str, Any], ctx: ToolContext) -> str:
        record = await harness[0].agent.call_tool(ToolCall("x/1", "secret", {}), [SECRET])
        records.append(record)
        return record.result.content

    stranger = FakeConnection(platform="fake", self_id="bot")
    model = ScriptedModel([reply("", tool_call("sneak")), reply("", tool_call("finish"))])
    async with RuntimeHarness(
        tmp_path,
        model=model,
        profile=profile(tmp_path, codemode=None, trust=STRICT),
        sid="fake:bot",
        channel_id="group:7",
        extra_tools=[SECRET, Tool("sneak", "Sneak.", sneak, trust="untrusted")],
        kernel_tools=True,
        wakeup=EveryMessageWakeup(),
    ) as rt:
        harness.append(rt)
        await rt.deliver(stranger.event("hi", channel_id="group:7", user_id="99"))
        with anyio.fail_after(20):
            await rt.settled()
    assert records[0].status == "blocked"
    assert records[0].result.content == "blocked: secret needs trust owner; this turn is untrusted"


@pytest.mark.parametrize("name", ["finish", "wait"])
async def test_finish_and_wait_are_not_callable_inside_programs(tmp_path: Path, name: str) -> None:
    model = ScriptedModel([reply("", program(f"await tools.{name}({{}}); return 1;")), reply("", tool_call("finish"))])
    async with RuntimeHarness(tmp_path, model=model, profile=profile(tmp_path), kernel_tools=True) as rt:
        outcome = await rt.say("stop")
        first = tool_results(rt)[0]
    assert first["is_error"]
    assert result_text(first).startswith("the program failed (thrown): TypeError: not a function")
    assert (outcome.reason, outcome.steps) == ("finish", 2)
    assert not rt._waiter.armed


async def test_a_send_inside_a_program_does_not_end_the_turn(tmp_path: Path) -> None:
    code = "const sent = await tools.send_message({ messages: ['hello from a program'] }); return sent;"
    model = ScriptedModel([reply("", program(code)), reply("", tool_call("finish"))])
    async with RuntimeHarness(tmp_path, model=model, profile=profile(tmp_path), kernel_tools=True) as rt:
        outcome = await rt.say("greet me")
        first = json.loads(result_text(tool_results(rt)[0]))
    assert rt.channel.texts() == ["hello from a program"]
    assert first == {"ok": True, "ids": ["out-1"]}
    assert (outcome.reason, outcome.steps) == ("finish", 2)


async def test_a_direct_send_still_ends_the_turn(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("send_message", {"messages": ["hi"]}))])
    async with RuntimeHarness(tmp_path, model=model, profile=profile(tmp_path), kernel_tools=True) as rt:
        outcome = await rt.say("greet me")
    assert (outcome.reason, outcome.steps) == ("sent", 1)


async def test_tools_in_direct_keep_their_call_and_stay_callable_in_programs(tmp_path: Path) -> None:
    trip = Trip()
    code = "return await tools.plan({ titles: ['a', 'b'], rain: false });"
    calls = [program(code), tool_call("plan", {"titles": ["c"], "rain": True})]
    model = ScriptedModel([reply("", *calls), reply("", tool_call("finish"))])
    direct = profile(tmp_path, codemode=CodemodeConfig(direct=("plan",)))
    async with RuntimeHarness(tmp_path, model=model, profile=direct, extra_tools=trip.tools(), kernel_tools=True) as rt:
        await rt.say("plan")
        texts = [result_text(r) for r in tool_results(rt)]
    assert names(model.requests[0]) == ["plan", "send_message", "finish", "wait", "codemode"]
    assert "tools.plan(input" in description(model.requests[0])
    assert texts[:2] == ['"2 plans, rain=False"', "1 plans, rain=True"]


async def test_a_failing_program_is_an_error_result_that_says_why_with_its_line(tmp_path: Path) -> None:
    code = "console.log('checking');\nconst x = 1;\nthrow new RangeError('too big: ' + x);"
    model = ScriptedModel([reply("", program(code)), reply("", tool_call("finish"))])
    async with RuntimeHarness(tmp_path, model=model, profile=profile(tmp_path), kernel_tools=True) as rt:
        await rt.say("go")
        first = tool_results(rt)[0]
    assert first["is_error"]
    assert result_text(first) == (
        "the program failed (thrown): RangeError: too big: 1\n    at line 3, column 36\nconsole output:\nchecking"
    )


async def test_the_profiles_limits_apply_to_programs(tmp_path: Path) -> None:
    small = profile(tmp_path, codemode=CodemodeConfig(timeout_ms=300, max_result_bytes=40))
    model = ScriptedModel(
        [reply("", program("while (true) {}"), program("return 'x'.repeat(100);")), reply("", tool_call("finish"))]
    )
    async with RuntimeHarness(tmp_path, model=model, profile=small, kernel_tools=True) as rt:
        await rt.say("loop")
        texts = [result_text(r) for r in tool_results(rt)]
    assert texts[0] == "the program failed (timeout): the program ran out of time (300 ms, timeout_ms)"
    assert texts[1].startswith("the program failed (result_too_large): the program's result is 102 bytes")
    assert "Limits: 300 ms" in description(model.requests[0])


async def test_an_extension_tool_named_codemode_is_a_conflict(tmp_path: Path) -> None:
    async def other(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return "mine"

    model = ScriptedModel([reply("", tool_call("finish"))])
    clash = Tool("codemode", "Someone else's codemode.", other)
    async with RuntimeHarness(
        tmp_path, model=model, profile=profile(tmp_path), extra_tools=[clash], kernel_tools=True
    ) as rt:
        outcome = await rt.say("hi")
    assert (outcome.status, outcome.reason) == ("failed", "ToolConflictError")
    assert "a tool named 'codemode' is offered, but codemode needs that name" in str(outcome.error)
