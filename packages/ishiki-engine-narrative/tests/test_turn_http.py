"""A whole turn over real HTTP: each role's request and answer through the gateway and the fake OpenAI server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from ishiki_host import Entry
from ishiki_host.testing import FakeOpenAIServer, Gateway, ScriptedCall

from ishiki_engine_narrative import ENTRY_TYPE, ROLE_KIND

pytestmark = pytest.mark.anyio

Records = Callable[[list[Entry], str], list[Entry]]

STORY = {
    "present": ["Ana"],
    "situation": "Ana asked when the library opens; Kiri looked it up and told her 9:00.",
    "threads": ["Ana may come by tomorrow"],
    "intent": "Help Ana if she comes by",
}


def decision(intent: str, rationale: str) -> str:
    return json.dumps({"intent": intent, "rationale": rationale})


def script_act_then_reply(server: FakeOpenAIServer) -> None:
    server.reply(decision("act", "look up the opening hours in the catalogue"), usage=(300, 20))
    server.reply("", tool_calls=[ScriptedCall("lookup", {"query": "opening hours"}, id="dec-1")], usage=(400, 15))
    server.reply(decision("reply", "tell Ana we open at 9:00"), usage=(350, 20))
    server.reply("We open at nine, Ana! Come by any time.", usage=(380, 12))
    server.reply(json.dumps(STORY), usage=(500, 60))


def user_text(request: Any) -> str:
    return str(request.json["messages"][-1]["content"])


async def test_a_turn_acts_then_replies_through_the_gateway(
    gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any, records: Records
) -> None:
    script_act_then_reply(fake_openai)
    rt = make_runtime(gateway.model("fake:main"), chat)
    async with rt:
        outcome = await run_turn(rt, "Hi Kiri, when does the library open?")
        entries = list(rt.log.iter_forward())
    assert (outcome.status, outcome.reason, outcome.steps) == ("done", "sent", 2)
    assert chat.lookups == ["opening hours"]
    assert chat.sent == [["We open at nine, Ana! Come by any time."]]
    narrator, decoder, narrator2, replyer, update = fake_openai.requests
    # the Narrator reads the persona, the story (none yet), the events and what the persona can do
    assert narrator.json["messages"][0]["content"].startswith("You are the Narrator")
    assert "You are Kiri" in user_text(narrator)
    assert "(nothing yet: the story starts now)" in user_text(narrator)
    assert "USER: Hi Kiri, when does the library open?" in user_text(narrator)
    assert "- lookup: Look something up" in user_text(narrator)
    assert "tools" not in narrator.json
    # the Action Decoder gets the real schema of the action tools (not send_message/finish), a call required
    assert [t["function"]["name"] for t in decoder.json["tools"]] == ["lookup"]
    assert decoder.json["tools"][0]["function"]["parameters"]["required"] == ["query"]
    assert decoder.json["tool_choice"] == "required"
    assert "act: look up the opening hours in the catalogue" in user_text(decoder)
    # the second step's Narrator sees the tool result; the Replyer writes in the persona's voice
    assert "RESULT of lookup: catalogue: opening hours -> open 9:00-17:00" in user_text(narrator2)
    assert replyer.json["messages"][0]["content"].startswith("You write the next chat message")
    assert "tell Ana we open at 9:00" in user_text(replyer)
    # after the turn, the story update runs in the background
    assert update.json["messages"][0]["content"].startswith("You keep the running story")
    assert "YOU called send_message" in user_text(update)
    roles = [(e.data["role"], e.data["step"], e.data["ok"]) for e in records(entries, ROLE_KIND)]
    assert roles == [("narrator", 1, True), ("decoder", 1, True), ("narrator", 2, True), ("replyer", 2, True)]


async def test_the_fact_log_holds_every_role_call_and_the_story(
    gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any, records: Records
) -> None:
    script_act_then_reply(fake_openai)
    async with make_runtime(gateway.model("fake:main"), chat) as rt:
        await run_turn(rt, "Hi Kiri, when does the library open?")
        entries = list(rt.log.iter_forward())
    role = records(entries, ROLE_KIND)
    assert all(e.turn == 1 for e in role)
    assert role[0].data["parsed"] == {"intent": "act", "rationale": "look up the opening hours in the catalogue"}
    assert role[0].data["model"] == "fake:main"
    assert role[0].data["usage"] == {"input_tokens": 300, "output_tokens": 20, "estimated": False}
    assert role[1].data["parsed"] == [{"id": "dec-1", "name": "lookup", "arguments": {"query": "opening hours"}}]
    assert role[3].data["parsed"] == {"messages": ["We open at nine, Ana! Come by any time."]}
    assert role[3].data["text"] == "We open at nine, Ana! Come by any time."
    # each step's assistant message is the pipeline's standard result, with every role's usage summed
    assistants = [e for e in entries if e.data.get("role") == "assistant"]
    assert [c["name"] for c in assistants[0].data["tool_calls"]] == ["lookup"]
    assert assistants[0].data["usage"]["input_tokens"] == 700
    assert assistants[1].data["tool_calls"][0]["arguments"] == {"messages": ["We open at nine, Ana! Come by any time."]}
    assert assistants[1].data["parts"] == []
    # the story: appended after the turn's end, outside the turn, with its usage recorded
    done = next(e for e in entries if e.name == "turn.done")
    story = [e for e in entries if e.type == ENTRY_TYPE]
    assert len(story) == 1
    assert story[0].id > done.id
    assert story[0].turn is None
    assert story[0].data["upto"] == done.id
    assert story[0].data["after_turn"] == 1
    assert {k: story[0].data[k] for k in STORY} == STORY
    assert story[0].data["reason"] == "turn"
    usage = [e for e in entries if e.type == "usage"]
    assert usage[0].data["purpose"] == "narrative.update"
    assert usage[0].data["input_tokens"] == 500


async def test_each_role_uses_its_own_model(
    gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any
) -> None:
    fake_openai.reply(decision("reply", "greet Ana"))
    fake_openai.reply("Hello Ana!")
    fake_openai.reply(json.dumps(STORY))
    models = {"fake:narrator": gateway.model("fake:narrator"), "fake:writer": gateway.model("fake:writer")}
    toolcall = {"narrator": {"model": "fake:narrator", "max_tokens": 77}, "replyer": {"model": "fake:writer"}}
    context = {"update": {"model": "fake:narrator", "temperature": 0.1}}
    async with make_runtime(gateway.model("fake:main"), chat, toolcall=toolcall, context=context, models=models) as rt:
        await run_turn(rt, "Hi!")
    narrator, replyer, update = fake_openai.requests
    assert (narrator.json["model"], narrator.json["max_tokens"]) == ("narrator", 77)
    assert replyer.json["model"] == "writer"
    assert (update.json["model"], update.json["temperature"]) == ("narrator", 0.1)
