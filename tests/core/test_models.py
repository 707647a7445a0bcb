"""The in-process model stand-ins: FunctionModel and ScriptedModel, generate and stream."""

from __future__ import annotations

import json

import pytest

from ishiki_host.core.messages import Message
from ishiki_host.core.model import LanguageModel, ModelRequest, StreamDone, TextDelta, ToolCallDelta, generate_by_stream
from ishiki_host.errors import ModelBadRequest, ModelUnavailable
from ishiki_host.testing.models import FunctionModel, ScriptedModel, reply, tool_call

REQUEST = ModelRequest(messages=(Message.user("hi"),))


def test_tool_call_parses_string_arguments_like_a_provider() -> None:
    assert tool_call("a", '{"x": 1}', id="1").arguments == {"x": 1}
    broken = tool_call("a", "{", id="2")
    assert broken.arguments == {}
    assert broken.raw_arguments == "{"
    assert broken.parse_error.startswith("invalid JSON")
    assert tool_call("a", "[1]").parse_error == "expected a JSON object, got list"
    assert tool_call("a").id != tool_call("a").id


@pytest.mark.anyio
async def test_function_model_answers_and_records() -> None:
    async def answer(request: ModelRequest) -> object:
        return reply(f"you said {request.messages[-1].text}")

    model = FunctionModel(answer, name="t:fn")  # type: ignore[arg-type]
    assert isinstance(model, LanguageModel)
    assert model.name == "t:fn"
    assert (await model.generate(REQUEST)).text == "you said hi"
    assert model.requests == [REQUEST]
    with pytest.raises(TypeError, match="not ModelResult"):
        await FunctionModel(lambda request: "text").generate(REQUEST)  # type: ignore[arg-type, return-value]


@pytest.mark.anyio
async def test_scripted_model_plays_its_script_then_refuses() -> None:
    model = ScriptedModel(["one", ModelUnavailable("down"), lambda request: reply("three")])
    assert (await model.generate(REQUEST)).text == "one"
    with pytest.raises(ModelUnavailable):
        await model.generate(REQUEST)
    assert (await model.generate(REQUEST)).text == "three"
    assert model.remaining == 0
    with pytest.raises(ModelBadRequest, match="no answer for call 4 \\(3 scripted\\)"):
        await model.generate(REQUEST)


@pytest.mark.anyio
async def test_streams_carry_the_same_result() -> None:
    result = reply("a longer answer text", tool_call("f", {"q": "x"}, id="c"), tool_call("g", "{", id="d"))
    model = ScriptedModel([result, result])
    events = [event async for event in model.stream(REQUEST)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == result.text
    pieces = [e for e in events if isinstance(e, ToolCallDelta)]
    assert json.loads("".join(p.arguments for p in pieces if p.index == 0)) == {"q": "x"}
    assert "".join(p.arguments for p in pieces if p.index == 1) == "{"
    assert isinstance(events[-1], StreamDone)
    assert events[-1].result == result
    assert await generate_by_stream(model, REQUEST) == result


@pytest.mark.anyio
async def test_the_plugin_gives_plugin_authors_a_fact_log(fact_log) -> None:  # type: ignore[no-untyped-def]
    from ishiki_host.core.agent import Agent
    from ishiki_host.core.turns import TurnSetup
    from ishiki_host.testing.agent import running

    model = ScriptedModel(["hello"])
    async with running(Agent(fact_log, model, lambda turn: TurnSetup())) as agent:
        outcome = await (await agent.continue_("hi"))
    assert outcome.result == reply("hello")
    assert [e.type for e in fact_log.iter_forward()] == ["event", "message", "message", "event"]
