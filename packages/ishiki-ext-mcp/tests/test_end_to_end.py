"""Turns that use MCP tools and resources, with a real model protocol (the loopback OpenAI server)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from ishiki_host import FakeClock, ModelAPI
from ishiki_host.testing import FakeOpenAIServer, Gateway, ModelsConfig, ScriptedCall, ScriptedModel, reply, tool_call

from ishiki_ext_mcp.testing import DEADLINE, ConfigDir, RuntimeFactory, demo

pytestmark = pytest.mark.anyio


def tool_results(rt: Any) -> list[dict[str, Any]]:
    return [entry.data for entry in rt.log.iter_forward() if entry.data.get("role") == "tool"]


def result_text(data: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in data["parts"])


async def test_a_turn_calls_a_server_tool_through_the_model_protocol(
    cfg: ConfigDir,
    open_runtime: RuntimeFactory,
    fake_openai: FakeOpenAIServer,
    model_apis: dict[str, ModelAPI],
    fake_clock: FakeClock,
) -> None:
    cfg.write({"demo": demo()})
    models = ModelsConfig(providers={"fake": fake_openai.provider("fake", ["fake-model"])})
    fake_openai.reply("", tool_calls=[ScriptedCall("demo__add", {"a": 2, "b": 3})])
    fake_openai.reply("2 + 3 = 5")
    async with Gateway(models, model_apis, clock=fake_clock) as gateway:
        model = gateway.model("fake:fake-model")
        async with open_runtime(model=model) as (rt, _instance):
            with anyio.fail_after(DEADLINE):
                outcome = await rt.say("what is 2 + 3?")
            assert outcome.status == "done"
            assert [result_text(r) for r in tool_results(rt)] == ["5"]
    first = fake_openai.requests[0].json
    offered = {tool["function"]["name"]: tool["function"] for tool in first["tools"]}
    assert {"demo__add", "demo__echo", "demo__whoami", "demo__crash", "read"} <= set(offered)
    add = offered["demo__add"]
    assert add["description"] == "Add two whole numbers."
    assert add["parameters"]["properties"] == {
        "a": {"title": "A", "type": "integer"},
        "b": {"title": "B", "type": "integer"},
    }
    assert add["parameters"]["required"] == ["a", "b"]
    system = first["messages"][0]["content"]
    assert "A demo server: arithmetic, echoes and ways to fail." in system
    assert "mcp://demo?uri=note://greeting" in system
    second = fake_openai.requests[1].json["messages"]
    assert second[-1]["role"] == "tool"
    assert second[-1]["content"] == "5"


async def test_a_turn_reads_a_server_resource(cfg: ConfigDir, open_runtime: RuntimeFactory) -> None:
    cfg.write({"demo": demo()})
    model = ScriptedModel(
        [
            reply("", tool_call("read", {"url": "mcp://demo?uri=note://greeting"})),
            reply("", tool_call("read", {"url": "mcp://demo?uri=note://ada"})),
            reply("", tool_call("read", {"url": "mcp://demo"})),
            reply("done"),
        ]
    )
    async with open_runtime(model=model) as (rt, _instance):
        with anyio.fail_after(DEADLINE):
            await rt.say("read the greeting")
        texts = [result_text(r) for r in tool_results(rt)]
    assert "hello from the resource" in texts[0]
    assert "note ada" in texts[1]
    assert "mcp://demo?uri=note://greeting  greeting (text/plain) — A friendly greeting." in texts[2]
    assert "mcp://demo?uri=note://{name}" in texts[2]


async def test_structured_and_error_results(cfg: ConfigDir, open_runtime: RuntimeFactory) -> None:
    cfg.write({"demo": demo()})
    async with open_runtime() as (_rt, instance):
        tools = {tool.name: tool for tool in instance.ishiki_tools()}
        echo = await tools["demo__echo"].handler({"text": "hi"}, None)  # type: ignore[arg-type]
        failed = await tools["demo__fail"].handler({"reason": "no luck"}, None)  # type: ignore[arg-type]
    assert (echo.content, echo.is_error, echo.data) == ("hi", False, {"result": "hi"})
    assert failed.is_error
    assert "no luck" in failed.content
    assert json.loads(json.dumps(echo.data)) == {"result": "hi"}
