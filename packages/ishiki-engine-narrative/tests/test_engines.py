"""The engines as plugins: entry points, options, role models and prompt files, the wrapper as a model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ishiki_host import Message, ModelRequest, StreamDone, ToolCallDelta, ToolSpec
from ishiki_host.errors import ConfigError
from ishiki_host.testing import FunctionModel, ScriptedModel, discover, reply, tool_call

from ishiki_engine_narrative import NarrativeContextEngine, NarrativeToolcallEngine

pytestmark = pytest.mark.anyio


def test_both_halves_are_installed_and_require_each_other() -> None:
    registry = discover()
    context = registry.spec("ishiki.engine.context.narrative")
    toolcall = registry.spec("ishiki.engine.toolcall.narrative")
    assert context is not None
    assert toolcall is not None
    assert context.requires == ("ishiki.engine.toolcall.narrative",)
    assert toolcall.requires == ("ishiki.engine.context.narrative",)
    assert context.config_schema["properties"]["update"]["properties"]["max_tokens"]["default"] == 700


def test_an_unknown_role_model_is_a_config_error(make_runtime: Any, chat: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        make_runtime(ScriptedModel([]), chat, toolcall={"replyer": {"model": "nowhere:model"}})
    assert caught.value.path == "toolcall.narrative.replyer.model"
    assert "model 'nowhere:model' cannot be used" in caught.value.message
    assert caught.value.file is not None
    assert caught.value.file.endswith("profile.yml")


@pytest.mark.parametrize("content", [None, "  \n"])
def test_a_missing_or_empty_prompt_file_is_a_config_error(
    content: str | None, make_runtime: Any, chat: Any, tmp_path: Path
) -> None:
    if content is not None:
        (tmp_path / "update.md").write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        make_runtime(ScriptedModel([]), chat, context={"update": {"prompt": "update.md"}})
    assert caught.value.path == "context.narrative.update.prompt"
    assert str(tmp_path / "update.md") in caught.value.message
    assert ("is empty" if content else "No such file") in caught.value.message


@pytest.mark.parametrize(
    ("engine", "config", "path", "message"),
    [
        (NarrativeContextEngine, {"max_messages": 1}, "context.narrative.max_messages", "less than the minimum of 2"),
        (NarrativeToolcallEngine, {"narator": {}}, "toolcall.narrative", "'narator' was unexpected"),
        (NarrativeToolcallEngine, {"decoder": {"retries": -1}}, "toolcall.narrative.decoder.retries", "minimum"),
    ],
)
def test_bad_options_name_the_key(
    engine: Any, config: dict[str, Any], path: str, message: str, make_runtime: Any, chat: Any
) -> None:
    rt = make_runtime(ScriptedModel([]), chat)
    with pytest.raises(ConfigError) as caught:
        engine().create(rt.context, config)
    assert caught.value.path == path
    assert message in caught.value.message


async def test_a_prompt_file_replaces_the_built_in_instructions(
    make_runtime: Any, chat: Any, run_turn: Any, tmp_path: Path
) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "narrator.md").write_text("You decide for Kiri. Be bold.\n", encoding="utf-8")
    model = ScriptedModel([json.dumps({"intent": "finish", "rationale": "nothing to do"})])
    async with make_runtime(model, chat, toolcall={"narrator": {"prompt": "prompts/narrator.md"}}) as rt:
        await rt.say("hi")
    system, user = model.requests[0].messages
    assert system.text == "You decide for Kiri. Be bold."
    assert user.text.endswith('"rationale": "<one line: why, and exactly what to do or say>"}')  # format kept


async def test_without_send_message_a_reply_is_plain_text_and_streams(make_runtime: Any, chat: Any) -> None:
    model = ScriptedModel(
        [
            json.dumps({"intent": "reply", "rationale": "greet"}),
            "Hello!\n---\nHow can I help?",
            json.dumps({"intent": "act", "rationale": "look up hours"}),
            reply("", tool_call("lookup", {"query": "hours"})),
        ]
    )
    request = ModelRequest((Message.system("You are Kiri."), Message.user("hi")), tools=())
    async with make_runtime(model, chat) as rt:
        wrapped = rt.engines.toolcall.wrap(model)
        result = await wrapped.generate(request)
        tools = (ToolSpec("lookup", "Look up.", {"type": "object", "properties": {"query": {"type": "string"}}}),)
        events = [event async for event in wrapped.stream(ModelRequest(request.messages, tools=tools))]
    assert wrapped.name == "narrative:test:scripted"
    assert (result.text, result.tool_calls, result.finish_reason) == ("Hello!\n\nHow can I help?", (), "stop")
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(d.name, json.loads(d.arguments)) for d in deltas] == [("lookup", {"query": "hours"})]
    assert isinstance(events[-1], StreamDone)
    assert events[-1].result.tool_calls[0].id == deltas[0].id


async def test_tool_choice_none_leaves_the_roles_no_tools(make_runtime: Any, chat: Any) -> None:
    seen: list[str] = []

    def answer(request: ModelRequest) -> Any:
        seen.append(request.messages[-1].text)
        return reply(json.dumps({"intent": "finish", "rationale": "no tools now"}))

    model = FunctionModel(answer)
    tools = (ToolSpec("lookup", "Look up."), ToolSpec("finish", "End."))
    async with make_runtime(model, chat) as rt:
        result = await rt.engines.toolcall.wrap(model).generate(
            ModelRequest((Message.user("hi"),), tools=tools, tool_choice="none")
        )
    assert result.tool_calls == ()
    assert "- act: no tools are available now" in seen[0]
