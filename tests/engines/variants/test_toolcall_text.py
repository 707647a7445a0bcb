"""The ``json`` and ``xml`` toolcall engines: tool-using turns over real HTTP, notes to the model, ids, streaming."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.config.models import ModelsConfig, ModelSpec
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.hooks import AgentHooks, StepDecision, Stop
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, StreamDone, TextDelta, ToolCallDelta
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.core.turns import Step
from ishiki_host.engines.toolcall.text import NOTE_HEADER, JsonToolcallEngine, TextToolcall, XmlToolcallEngine
from ishiki_host.engines.wakeup.jev_model import JEV_CONFIG_SCHEMA
from ishiki_host.engines.wakeup.willingness_model import WILLINGNESS_CONFIG_SCHEMA
from ishiki_host.errors import ConfigError
from ishiki_host.gateway import Gateway
from ishiki_host.plugins.discovery import discover
from ishiki_host.plugins.runtime_api import ToolcallEngineInstance
from ishiki_host.testing import FakeOpenAIServer
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import ScriptedModel

pytestmark = pytest.mark.anyio

JSON_CALL = (
    '```json\n{"thoughts": {"plan": "look it up"}, "actions": [{"function": "lookup", "params": {"word": "tea"}}]}\n```'
)
JSON_DONE = 'All done.\n```json\n{"actions": []}\n```'
XML_CALL = 'Let me check.\n<tool_call>\n{"name": "lookup", "arguments": {"word": "tea"}}\n</tool_call>'


def lookup_tool(seen: list[Mapping[str, Any]]) -> Tool:
    async def lookup(args: Mapping[str, Any], ctx: ToolContext) -> str:
        seen.append(dict(args))
        return f"{args['word']}: a hot drink"

    schema = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
    return Tool("lookup", "Look a word up in the dictionary.", lookup, schema)


@pytest.fixture
async def gateway(fake_openai: FakeOpenAIServer, model_apis: Any, fake_clock: FakeClock) -> AsyncIterator[Gateway]:
    config = ModelsConfig(providers={"fake": fake_openai.provider("fake", [ModelSpec("plain", context_window=8000)])})
    async with Gateway(config, model_apis, clock=fake_clock) as opened:
        yield opened


def entries(rt: RuntimeHarness) -> list[Mapping[str, Any]]:
    return [e.data for e in rt.log.iter_forward()]


async def test_the_json_engine_completes_a_tool_using_turn_over_http(
    tmp_path: Path, fake_openai: FakeOpenAIServer, gateway: Gateway, fake_clock: FakeClock
) -> None:
    fake_openai.reply(JSON_CALL)
    fake_openai.reply(JSON_DONE)
    seen: list[Mapping[str, Any]] = []
    engine = JsonToolcallEngine()
    with anyio.fail_after(20):
        async with RuntimeHarness(
            tmp_path,
            model=gateway.model("fake:plain"),
            clock=fake_clock,
            toolcall=lambda rt: engine.create(rt, {}),
            extra_tools=[lookup_tool(seen)],
        ) as rt:
            outcome = await rt.say("what is tea?")
            log = entries(rt)
            sent = [m.text for m in rt.channel.sent]
    assert (outcome.status, outcome.reason, outcome.steps) == ("done", "no_tool_calls", 2)
    assert sent == []  # the json prompt says prose outside the block is shown to no one: it is never sent
    assert seen == [{"word": "tea"}]
    first, second = (r.json for r in fake_openai.requests)
    assert "tools" not in first
    system = first["messages"][0]["content"]
    assert system.startswith("You are a test persona.\n\n")
    assert "\n\n## How to act" in system
    assert "### lookup\nLook a word up in the dictionary." in system
    assert second["messages"][2] == {
        "role": "assistant",
        "content": '```json\n{"actions": [{"function": "lookup", "params": {"word": "tea"}}]}\n```',
    }
    assert second["messages"][3]["role"] == "user"
    assert second["messages"][3]["content"].startswith("Observations (results of your actions):\n\n#1 lookup: ok\n")
    assistant = [e for e in log if e.get("role") == "assistant"]
    assert assistant[0]["tool_calls"] == [{"id": "call_t1_1_0", "name": "lookup", "arguments": {"word": "tea"}}]
    assert assistant[1]["parts"] == [{"type": "text", "text": "All done."}]


async def test_the_xml_engine_completes_a_tool_using_turn_over_http(
    tmp_path: Path, fake_openai: FakeOpenAIServer, gateway: Gateway, fake_clock: FakeClock
) -> None:
    fake_openai.reply(XML_CALL)
    fake_openai.reply("Tea is a hot drink.")
    seen: list[Mapping[str, Any]] = []
    with anyio.fail_after(20):
        async with RuntimeHarness(
            tmp_path,
            model=gateway.model("fake:plain"),
            clock=fake_clock,
            toolcall=lambda rt: XmlToolcallEngine().create(rt, {}),
            extra_tools=[lookup_tool(seen)],
        ) as rt:
            outcome = await rt.say("what is tea?")
            sent = [m.text for m in rt.channel.sent]
    assert (outcome.status, outcome.steps) == ("done", 2)
    assert sent == ["Tea is a hot drink."]  # Hermes-style text outside the blocks is the reply
    assert seen == [{"word": "tea"}]
    first, second = (r.json for r in fake_openai.requests)
    assert '<tools>\n{"type": "function", "function": {"name": "lookup"' in first["messages"][0]["content"]
    assert second["messages"][2]["content"] == (
        'Let me check.\n<tool_call>\n{"name": "lookup", "arguments": {"word": "tea"}}\n</tool_call>'
    )
    assert second["messages"][3] == {
        "role": "user",
        "content": '<tool_response>\n{"name": "lookup", "content": "tea: a hot drink"}\n</tool_response>',
    }


@pytest.mark.parametrize(
    ("engine", "bad", "good", "note"),
    [
        (
            JsonToolcallEngine,
            '```json\n{"actions": [{"function": "look_up", "params": {"word": "tea"}}]}\n```',
            JSON_CALL,
            'There is no function "look_up"; that call was not run. Did you mean "lookup"?',
        ),
        (JsonToolcallEngine, "I would like to look up tea.", JSON_CALL, "Your answer had no JSON action block"),
        (
            JsonToolcallEngine,
            '```json\n{"actions": [{"function": "lookup", "params": {"word": "te',
            JSON_CALL,
            "Your answer could not be read",
        ),
        (
            XmlToolcallEngine,
            '<tool_call>\n{"name": "look_up", "arguments": {}}\n</tool_call>',
            XML_CALL,
            'There is no function "look_up"',
        ),
        (XmlToolcallEngine, '<tool_call>\n{"arguments": {"word": "te', XML_CALL, "A <tool_call> block could not be"),
        (XmlToolcallEngine, "<tool_call>\n{]\n</tool_call>", XML_CALL, 'A <tool_call> block had no "name"'),
    ],
)
async def test_a_bad_answer_is_noted_for_the_model_and_the_turn_goes_on(
    tmp_path: Path, engine: Any, bad: str, good: str, note: str
) -> None:
    model = ScriptedModel([bad, good, "fine" if engine is XmlToolcallEngine else JSON_DONE])
    seen: list[Mapping[str, Any]] = []
    with anyio.fail_after(20):
        async with RuntimeHarness(
            tmp_path, model=model, toolcall=lambda rt: engine().create(rt, {}), extra_tools=[lookup_tool(seen)]
        ) as rt:
            outcome = await rt.say("tea?")
            notes = [e for e in rt.log.iter_forward() if "toolcall" in e.data]
    assert (outcome.status, outcome.steps, seen) == ("done", 3, [{"word": "tea"}])
    (logged,) = notes
    assert logged.turn == 1
    assert logged.data["role"] == "user"
    assert logged.data["toolcall"]["engine"] == ("json" if engine is JsonToolcallEngine else "xml")
    second = model.requests[1].messages
    assert second[-1].role == "user"
    assert second[-1].text.startswith(NOTE_HEADER)
    assert note in second[-1].text


async def test_answers_that_cannot_be_acted_on_end_the_turn_after_the_retries(tmp_path: Path) -> None:
    model = ScriptedModel(["no block here", "still none", "nothing"])
    with anyio.fail_after(20):
        engine = JsonToolcallEngine()
        async with RuntimeHarness(tmp_path, model=model, toolcall=lambda rt: engine.create(rt, {"retries": 1})) as rt:
            outcome = await rt.say("tea?")
            marks = [e.data["toolcall"] for e in rt.log.iter_forward() if "toolcall" in e.data]
    assert (outcome.status, outcome.reason, outcome.steps) == ("done", "unreadable", 2)
    assert marks == [{"engine": "json", "unreadable": True}] * 2
    assert model.remaining == 1


async def test_call_ids_are_unique_across_turns_and_restarts(tmp_path: Path) -> None:
    seen: list[Mapping[str, Any]] = []

    def runtime(model: ScriptedModel) -> RuntimeHarness:
        engine = XmlToolcallEngine()
        return RuntimeHarness(
            tmp_path, model=model, toolcall=lambda rt: engine.create(rt, {}), extra_tools=[lookup_tool(seen)]
        )

    with anyio.fail_after(20):
        async with runtime(ScriptedModel([XML_CALL + "\n" + XML_CALL, "ok", XML_CALL, "ok"])) as rt:
            await rt.say("one")
            await rt.say("two")
        async with runtime(ScriptedModel([XML_CALL, "ok"])) as rt:
            await rt.say("three")
            ids = [c["id"] for e in rt.log.iter_forward() for c in e.data.get("tool_calls") or ()]
    assert ids == ["call_t1_1_0", "call_t1_1_1", "call_t2_1_0", "call_t3_1_0"]


class Decides(AgentHooks):
    """A hook ahead of the engine's that decides every step itself (as a runtime's own stop rules might)."""

    def __init__(self, decision: StepDecision):
        self.decision = decision

    async def on_step_finish(self, step: Step) -> StepDecision:
        decision, self.decision = self.decision, None
        return decision


async def test_notes_reach_the_model_when_another_hook_decides_the_step(tmp_path: Path) -> None:
    unknown = '<tool_call>\n{"name": "look_up", "arguments": {}}\n</tool_call>'
    model = ScriptedModel([unknown, "ok"])
    with anyio.fail_after(20):
        async with RuntimeHarness(
            tmp_path, model=model, hooks=[Decides("continue")], toolcall=lambda rt: XmlToolcallEngine().create(rt, {})
        ) as rt:
            await rt.say("tea?")
    assert model.requests[1].messages[-1].text.startswith(NOTE_HEADER)


async def test_notes_of_a_turn_another_hook_ended_are_logged_after_it(tmp_path: Path) -> None:
    unknown = '<tool_call>\n{"name": "look_up", "arguments": {}}\n</tool_call>'
    model = ScriptedModel([unknown, "ok"])
    with anyio.fail_after(20):
        async with RuntimeHarness(
            tmp_path, model=model, hooks=[Decides(Stop("sent"))], toolcall=lambda rt: XmlToolcallEngine().create(rt, {})
        ) as rt:
            outcome = await rt.say("tea?")
            kinds = [(e.name or e.data.get("role"), e.turn) for e in rt.log.iter_forward()]
            await rt.say("again")
    assert outcome.reason == "sent"
    assert kinds[-2:] == [("turn.done", 1), ("user", None)]
    assert [m.role for m in model.requests[1].messages] == ["system", "user", "assistant", "user", "user"]
    assert model.requests[1].messages[2].text == unknown
    assert model.requests[1].messages[3].text.startswith(NOTE_HEADER)


async def test_the_xml_wrapper_streams_text_and_calls_as_they_become_certain(
    tmp_path: Path, fake_openai: FakeOpenAIServer, gateway: Gateway
) -> None:
    fake_openai.reply(XML_CALL + "\nand " + XML_CALL.replace("tea", "milk"), chunk_size=3)
    async with RuntimeHarness(tmp_path, model=gateway.model("fake:plain")) as rt:
        instance = XmlToolcallEngine().create(rt.context, {})
        assert isinstance(instance, ToolcallEngineInstance)
        wrapped = instance.wrap(rt.model)
        tools = (lookup_tool([]).spec(),)
        events = [e async for e in wrapped.stream(ModelRequest((Message.user("tea?"),), tools=tools))]
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ToolCallDelta") < max(i for i, k in enumerate(kinds) if k == "TextDelta")
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(c.index, c.name, c.arguments) for c in calls] == [
        (0, "lookup", '{"word": "tea"}'),
        (1, "lookup", '{"word": "milk"}'),
    ]
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.result.text == "Let me check.\n\nand Let me check."
    ids = [c.id for c in done.result.tool_calls]  # outside a turn: a prefix of its own, and a counter for steps
    assert [re.fullmatch(r"call_x[0-9a-f]{8}_0_(\d)", i).group(1) for i in ids] == ["0", "1"]  # type: ignore[union-attr]
    assert done.result.finish_reason == "tool_calls"
    assert "tools" not in fake_openai.last_request.json


async def test_the_json_wrapper_streams_the_parsed_answer_at_the_end(tmp_path: Path) -> None:
    model = ScriptedModel(["Looking.\n" + JSON_CALL])
    async with RuntimeHarness(tmp_path, model=model) as rt:
        wrapped = JsonToolcallEngine().create(rt.context, {}).wrap(model)
        tools = (lookup_tool([]).spec(),)
        events = [e async for e in wrapped.stream(ModelRequest((Message.user("tea?"),), tools=tools))]
    assert [type(e) for e in events] == [TextDelta, ToolCallDelta, StreamDone]
    assert events[0] == TextDelta("Looking.")
    assert isinstance(events[-1], StreamDone)
    assert [c.arguments for c in events[-1].result.tool_calls] == [{"word": "tea"}]


async def test_the_engine_has_no_instructions_and_validates_its_options(tmp_path: Path) -> None:
    async with RuntimeHarness(tmp_path, model=ScriptedModel([])) as rt:
        instance = JsonToolcallEngine().create(rt.context, {})
        assert isinstance(instance, TextToolcall)
        assert instance.hooks() is instance
        assert await instance.instructions() is None
        with pytest.raises(ConfigError) as caught:
            XmlToolcallEngine().create(rt.context, {"retry": 3})
    assert caught.value.path == "toolcall.xml"
    assert 'did you mean "retries"' in caught.value.message


def test_the_four_variants_are_real_entry_points_with_their_schemas() -> None:
    registry = discover()
    schemas = {
        "ishiki.engine.wakeup.willingness": WILLINGNESS_CONFIG_SCHEMA,
        "ishiki.engine.wakeup.jev": JEV_CONFIG_SCHEMA,
        "ishiki.engine.toolcall.json": JsonToolcallEngine.config_schema,
        "ishiki.engine.toolcall.xml": XmlToolcallEngine.config_schema,
    }
    for name, schema in schemas.items():
        spec = registry.spec(name)
        assert spec is not None, name
        assert spec.config_schema == schema
