"""toolsearch in a real runtime: resident tools, search, callable from the next step, the catalogue in the fact
log, a restart that keeps discoveries, trust, and toolsearch together with codemode."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host import Tool
from ishiki_host.config.profile_types import CodemodeConfig, Profile, ToolsearchConfig, TrustConfig
from ishiki_host.core.model import ModelRequest
from ishiki_host.core.tools import ToolContext
from ishiki_host.runtime.toolsearch import SNAPSHOT_DISTANCE
from ishiki_host.testing import EveryMessageWakeup, FakeConnection, RuntimeHarness
from ishiki_host.testing.models import ScriptedModel, reply, tool_call

pytestmark = pytest.mark.anyio

KERNEL = ["read", "send_message", "finish", "wait"]


def profile(tmp_path: Path, *, codemode: CodemodeConfig | None = None, **search: Any) -> Profile:
    base = Profile(id="ana", directory=tmp_path, file=tmp_path / "profile.yml", persona="You are Ana.", model="m")
    return replace(base, toolsearch=ToolsearchConfig(**search), codemode=codemode)


def names(request: ModelRequest) -> list[str]:
    return [spec.name for spec in request.tools]


def results(rt: RuntimeHarness) -> list[Any]:
    out = []
    for entry in rt.log.iter_forward():
        if entry.data.get("role") == "tool":
            text = entry.data["parts"][0]["text"]
            try:
                out.append(json.loads(text))
            except ValueError:
                out.append(text)
    return out


def catalog_entries(rt: RuntimeHarness) -> list[dict[str, Any]]:
    return [dict(e.data) for e in rt.log.iter_forward() if e.type == "catalog"]


def make_tool(name: str, description: str, ran: list[str] | None = None, trust: str = "trusted") -> Tool:
    async def handler(args: Mapping[str, Any], ctx: ToolContext) -> str:
        if ran is not None:
            ran.append(name)
        return f"{name} ran"

    return Tool(name, description, handler, trust=trust)  # type: ignore[arg-type]


def catalogue(ran: list[str] | None = None) -> list[Tool]:
    tools = [
        make_tool("weather_forecast", "The weather forecast of a city for the next days.", ran),
        make_tool("weather_alerts", "Storm and heat alerts of a region.", ran),
        make_tool("send_email", "Send an email to an address.", ran),
        make_tool("calendar_add", "Add an event to the calendar.", ran),
    ]
    tools += [make_tool(f"tool_{i:03}", f"Does thing number {i} with widgets.", ran) for i in range(40)]
    return tools


async def test_only_resident_tools_and_search_are_offered_at_first(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("finish"))])
    async with RuntimeHarness(
        tmp_path,
        model=model,
        profile=profile(tmp_path, resident=("send_email",)),
        extra_tools=catalogue(),
        kernel_tools=True,
    ) as rt:
        await rt.say("hi")
        entries = catalog_entries(rt)
    assert names(model.requests[0]) == ["send_email", *KERNEL, "search"]
    assert "call search with a few words" in model.requests[0].messages[0].text
    assert len(entries) == 1
    assert entries[0]["listed"] == entries[0]["catalogue"]
    assert len(entries[0]["catalogue"]) == 43
    assert "send_email" not in entries[0]["catalogue"]
    assert entries[0]["discovered"] == []


async def test_a_search_makes_the_best_tools_callable_from_the_next_step(tmp_path: Path) -> None:
    ran: list[str] = []
    model = ScriptedModel(
        [
            reply("", tool_call("search", {"query": "weather forecast"}), tool_call("weather_forecast")),
            reply("", tool_call("weather_forecast", {})),
            reply("", tool_call("weather_alerts", {})),
            reply("", tool_call("finish")),
        ]
    )
    async with RuntimeHarness(
        tmp_path, model=model, profile=profile(tmp_path, max_results=2), extra_tools=catalogue(ran), kernel_tools=True
    ) as rt:
        outcome = await rt.say("will it rain?")
        answers = results(rt)
        entries = catalog_entries(rt)
    found = answers[0]["found"]
    assert [tool["name"] for tool in found] == ["weather_forecast", "weather_alerts"]
    assert found[0]["description"] == "The weather forecast of a city for the next days."
    assert answers[0]["note"] == "These tools are callable from your next step. 42 more can be found."
    assert answers[1].startswith("unknown tool 'weather_forecast'")  # not in the step of the search
    assert answers[2] == "weather_forecast ran"
    assert answers[3] == "weather_alerts ran"  # still callable two steps after the search, for the whole turn
    assert names(model.requests[1]) == ["weather_forecast", "weather_alerts", *KERNEL, "search"]
    assert names(model.requests[2]) == names(model.requests[1]) == names(model.requests[3])
    assert ran == ["weather_forecast", "weather_alerts"]
    assert outcome.reason == "finish"
    assert entries[1]["added"] == ["weather_forecast", "weather_alerts"]
    assert entries[1]["query"] == "weather forecast"
    assert entries[1]["discovered"] == ["weather_alerts", "weather_forecast"]


async def test_a_later_search_finds_only_tools_not_found_yet(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            reply("", tool_call("search", {"query": "weather"})),
            reply("", tool_call("search", {"query": "weather"})),
            reply("", tool_call("search", {"query": "quantum teleport"})),
            reply("", tool_call("finish")),
        ]
    )
    async with RuntimeHarness(
        tmp_path, model=model, profile=profile(tmp_path, max_results=1), extra_tools=catalogue(), kernel_tools=True
    ) as rt:
        await rt.say("weather")
        answers = results(rt)
    assert [t["name"] for t in answers[0]["found"]] == ["weather_forecast"]
    assert [t["name"] for t in answers[1]["found"]] == ["weather_alerts"]
    assert answers[2] == {"found": [], "note": "No tool matched. Try other words; 42 tools can still be found."}


async def test_discoveries_survive_a_restart_of_the_runtime(tmp_path: Path) -> None:
    first = ScriptedModel([reply("", tool_call("search", {"query": "send email"})), reply("", tool_call("finish"))])
    async with RuntimeHarness(
        tmp_path, model=first, profile=profile(tmp_path, max_results=1), extra_tools=catalogue(), kernel_tools=True
    ) as rt:
        await rt.say("mail Bob")
    ran: list[str] = []
    second = ScriptedModel([reply("", tool_call("send_email")), reply("", tool_call("finish"))])
    async with RuntimeHarness(
        tmp_path, model=second, profile=profile(tmp_path, max_results=1), extra_tools=catalogue(ran), kernel_tools=True
    ) as rt:
        await rt.say("again")
        entries = catalog_entries(rt)
    assert names(second.requests[0]) == ["send_email", *KERNEL, "search"]
    assert ran == ["send_email"]
    assert len(entries) == 2  # nothing new to record: same catalogue, no new discovery


async def test_the_catalogue_is_updated_when_tools_come_and_go(tmp_path: Path) -> None:
    async with RuntimeHarness(
        tmp_path,
        model=ScriptedModel(["ok"]),
        profile=profile(tmp_path),
        extra_tools=catalogue()[:3],
        kernel_tools=True,
    ) as rt:
        await rt.say("one")
    tools = [*catalogue()[1:3], make_tool("translate", "Translate text.")]
    async with RuntimeHarness(
        tmp_path, model=ScriptedModel(["ok"]), profile=profile(tmp_path), extra_tools=tools, kernel_tools=True
    ) as rt:
        await rt.say("two")
        entries = catalog_entries(rt)
    assert (entries[1]["listed"], entries[1]["unlisted"]) == (["translate"], ["weather_forecast"])
    assert entries[1]["catalogue"] == ["send_email", "translate", "weather_alerts"]


async def test_a_snapshot_keeps_the_read_back_at_start_short(tmp_path: Path) -> None:
    async with RuntimeHarness(
        tmp_path, model=ScriptedModel(["ok"]), profile=profile(tmp_path), extra_tools=catalogue(), kernel_tools=True
    ) as rt:
        await rt.say("one")
        await rt.log.append_many([("custom", {"kind": "filler"})] * (SNAPSHOT_DISTANCE + 1))
    async with RuntimeHarness(
        tmp_path, model=ScriptedModel(["ok"]), profile=profile(tmp_path), extra_tools=catalogue(), kernel_tools=True
    ) as rt:
        await rt.say("two")
        entries = catalog_entries(rt)
    assert [e.get("snapshot", False) for e in entries] == [False, True]
    assert entries[1]["catalogue"] == entries[0]["catalogue"]


async def test_search_never_discloses_tools_above_the_turns_trust(tmp_path: Path) -> None:
    tools = [make_tool("diary_read", "Read the owner's diary.", trust="owner"), make_tool("dice", "Roll a dice.")]
    model = ScriptedModel([reply("", tool_call("search", {"query": "diary dice"})), reply("", tool_call("finish"))])
    strict = replace(profile(tmp_path), trust=TrustConfig(owners=("fake:1",), trusted=("fake:99",)))
    stranger = FakeConnection(platform="fake", self_id="bot")
    async with RuntimeHarness(
        tmp_path,
        model=model,
        profile=strict,
        sid="fake:bot",
        channel_id="group:7",
        extra_tools=tools,
        kernel_tools=True,
        wakeup=EveryMessageWakeup(),
    ) as rt:
        await rt.deliver(stranger.event("roll", channel_id="group:7", user_id="99"))
        with anyio.fail_after(20):
            await rt.settled()
        answers = results(rt)
    assert [t["name"] for t in answers[0]["found"]] == ["dice"]
    assert answers[0]["note"] == "These tools are callable from your next step. 0 more can be found."


async def test_with_codemode_discovered_tools_are_callable_in_programs_without_entering_the_list(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    code = "return [await tools.weather_forecast({}), await tools.weather_alerts({})];"
    model = ScriptedModel(
        [
            reply("", tool_call("search", {"query": "weather"})),
            reply("", tool_call("codemode", {"code": code})),
            reply("", tool_call("codemode", {"code": "return await tools.weather_alerts({});"})),
            reply("", tool_call("finish")),
        ]
    )
    both = profile(tmp_path, max_results=2, codemode=CodemodeConfig())
    async with RuntimeHarness(tmp_path, model=model, profile=both, extra_tools=catalogue(ran), kernel_tools=True) as rt:
        await rt.say("weather?")
        answers = results(rt)
    first, second = model.requests[0], model.requests[1]
    assert names(first) == ["send_message", "finish", "wait", "search", "codemode"]
    assert names(second) == names(first)
    described = {spec.name: spec.description for spec in second.tools}["codemode"]
    assert "tools.weather_forecast(input" in described
    assert "tools.weather_alerts(input" in described
    assert "tools.send_email" not in described
    assert "tools.read(input" in described
    assert answers[0]["note"].startswith("These tools are callable from your next step as tools.<name>(...) inside")
    assert answers[1] == ["weather_forecast ran", "weather_alerts ran"]
    assert answers[2] == "weather_alerts ran"  # the programs of a later step still reach them
    assert {spec.name: spec.description for spec in model.requests[2].tools}["codemode"] == described
    assert ran == ["weather_forecast", "weather_alerts", "weather_alerts"]


async def test_an_extension_tool_named_search_is_a_conflict(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("finish"))])
    async with RuntimeHarness(
        tmp_path, model=model, profile=profile(tmp_path), extra_tools=[make_tool("search", "Mine.")], kernel_tools=True
    ) as rt:
        outcome = await rt.say("hi")
    assert (outcome.status, outcome.reason) == ("failed", "ToolConflictError")
