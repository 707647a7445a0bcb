"""codemode and toolsearch end to end: a Host, the fake OpenAI server over HTTP, an extension's tools, and a
restart of the whole host."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from ishiki_host import Extension, Tool, hookimpl
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio


class Trip(Extension):
    """Three tools for planning a day."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        async def weather(args: Mapping[str, Any], tool_ctx: Any) -> dict[str, Any]:
            return {"city": args["city"], "rain": args["city"] == "Kyoto"}

        async def events(args: Mapping[str, Any], tool_ctx: Any) -> list[dict[str, Any]]:
            return [{"title": "Picnic", "outdoor": True}, {"title": "Museum", "outdoor": False}]

        async def plan(args: Mapping[str, Any], tool_ctx: Any) -> str:
            return "stay in" if args["rain"] else f"go to {', '.join(args['titles'])}"

        city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        titles = {"type": "array", "items": {"type": "string"}}
        plan_args = {"type": "object", "properties": {"titles": titles, "rain": {"type": "boolean"}}}
        tools = [
            Tool("city_weather", "The weather in a city.", weather, city),
            Tool("day_events", "The events of the day.", events),
            Tool("day_plan", "Plan the day from event titles.", plan, plan_args),
        ]

        class Instance:
            @hookimpl
            def ishiki_tools(self) -> list[Tool]:
                return tools

        return Instance()


TRIP = {"ishiki.ext.trip": Trip}
PROGRAM = """
const [weather, events] = await Promise.all([tools.city_weather({ city: "Oslo" }), tools.day_events()]);
const outdoor = events.filter((e) => e.outdoor).map((e) => e.title);
return { weather, plan: await tools.day_plan({ titles: outdoor, rain: weather.rain }) };
"""


def tool_names(request: RecordedRequest) -> list[str]:
    return [tool["function"]["name"] for tool in request.json["tools"]]


def tool_messages(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.json["messages"] if m["role"] == "tool"]


async def say(make_host_result: Any, text: str) -> None:
    delivery = await make_host_result.channel().say(text)
    with anyio.fail_after(20):
        await delivery.settled()


async def test_a_model_over_http_runs_a_program_that_composes_an_extensions_tools(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.push(
        Reply(tool_calls=(ScriptedCall("codemode", {"code": PROGRAM}),)),
        Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["Go to Picnic!"]}),)),
    )
    profiles = {"ana": profile_yaml(extra="extends: {trip: {}}\ncodemode: {timeout_ms: 10000}\n")}
    async with make_host(profiles=profiles, plugins=TRIP) as th:
        await say(th, "what should I do today?")
        sent = th.channel().texts()
    first, second = fake_openai.requests
    assert tool_names(first) == ["send_message", "finish", "wait", "codemode"]
    codemode = next(t["function"] for t in first.json["tools"] if t["function"]["name"] == "codemode")
    assert "tools.city_weather(input: { city: string }): Promise<unknown>" in codemode["description"]
    assert "Limits: 10000 ms" in codemode["description"]
    assert json.loads(tool_messages(second)[0]) == {"weather": {"city": "Oslo", "rain": False}, "plan": "go to Picnic"}
    assert sent == ["Go to Picnic!"]


async def test_tools_a_search_found_are_offered_again_after_the_host_restarts(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, tmp_path: Any
) -> None:
    fake_openai.push(
        Reply(tool_calls=(ScriptedCall("search", {"query": "weather in a city"}),)),
        Reply(tool_calls=(ScriptedCall("city_weather", {"city": "Oslo"}),)),
        Reply(tool_calls=(ScriptedCall("city_weather", {"city": "Kyoto"}),)),
        Reply(tool_calls=(ScriptedCall("finish", {}),)),
    )
    profiles = {"ana": profile_yaml(extra="extends: {trip: {}}\ntoolsearch: {max_results: 1}\n")}
    root = tmp_path / "bot"
    async with make_host(profiles=profiles, plugins=TRIP, root=root) as th:
        await say(th, "weather?")
    found = json.loads(tool_messages(fake_openai.requests[1])[0])["found"]
    assert [tool["name"] for tool in found] == ["city_weather"]
    assert tool_names(fake_openai.requests[0]) == ["read", "send_message", "finish", "wait", "search"]
    with_found = ["read", "send_message", "finish", "city_weather", "wait", "search"]
    assert [tool_names(request) for request in fake_openai.requests[1:4]] == [with_found] * 3
    # found at step 1, callable at steps 2 and 3: the rest of the turn, not only the next step
    assert json.loads(tool_messages(fake_openai.requests[3])[-1]) == {"city": "Kyoto", "rain": True}

    fake_openai.push(
        Reply(tool_calls=(ScriptedCall("city_weather", {"city": "Kyoto"}),)),
        Reply(tool_calls=(ScriptedCall("finish", {}),)),
    )
    async with make_host(profiles=profiles, plugins=TRIP, root=root) as th:
        await say(th, "and now?")
    after = fake_openai.requests[4:]
    assert tool_names(after[0]) == ["read", "send_message", "finish", "city_weather", "wait", "search"]
    assert json.loads(tool_messages(after[1])[-1]) == {"city": "Kyoto", "rain": True}
