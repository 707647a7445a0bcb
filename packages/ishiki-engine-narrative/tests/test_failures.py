"""Role failures fall back predictably, and every failure is in the fact log."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from ishiki_host import Entry
from ishiki_host.testing import FakeOpenAIServer, Gateway, ScriptedCall

from ishiki_engine_narrative import ENTRY_TYPE, ROLE_KIND, UPDATE_KIND

pytestmark = pytest.mark.anyio

Records = Callable[[list[Entry], str], list[Entry]]
STORY = json.dumps({"present": ["Ana"], "situation": "Ana greeted Kiri.", "threads": [], "intent": "Chat with Ana"})


def decision(intent: str, rationale: str) -> str:
    return json.dumps({"intent": intent, "rationale": rationale})


def calls(entries: list[Entry]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["arguments"]) for e in entries if e.data.get("role") == "assistant"
            for c in e.data.get("tool_calls", [])]  # fmt: skip


@pytest.mark.parametrize(
    "answer",
    ["I think we should reply to Ana.", '{"intent": "dance", "rationale": "why not"}', '{"intent": "reply"}'],
)
async def test_a_narrator_answer_that_is_not_the_strict_json_means_wait(
    answer: str, gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any,
    records: Records,
) -> None:  # fmt: skip
    fake_openai.reply(answer)
    fake_openai.reply(STORY)
    async with make_runtime(gateway.model("fake:main"), chat) as rt:
        outcome = await run_turn(rt, "Hi Kiri")
        entries = list(rt.log.iter_forward())
    assert (outcome.reason, chat.sent) == ("finish", [])  # no wait tool here: wait ends the turn with finish
    ((name, arguments),) = calls(entries)
    assert name == "finish"
    assert arguments["reason"].startswith("wait: the Narrator failed (RoleOutputInvalid: ")
    (record,) = records(entries, ROLE_KIND)
    assert (record.data["role"], record.data["ok"], record.data["fallback"]) == ("narrator", False, "wait")
    assert record.data["error"].startswith("RoleOutputInvalid: ")
    assert record.data["text"] == answer


async def test_a_narrator_model_error_means_wait_with_the_wait_tool(
    gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat_with_wait: Any, run_turn: Any,
    records: Records,
) -> None:  # fmt: skip
    fake_openai.error(400, "this model is not available for you")
    fake_openai.reply(STORY)
    async with make_runtime(gateway.model("fake:main"), chat_with_wait) as rt:
        outcome = await run_turn(rt, "Hi Kiri")
        entries = list(rt.log.iter_forward())
    assert outcome.reason == "finish"
    assert calls(entries) == [("wait", {})]
    (record,) = records(entries, ROLE_KIND)
    assert record.data["error"].startswith("ModelBadRequest: ")
    assert "usage" not in record.data


async def test_a_decoder_failure_is_reported_to_the_narrator_at_the_next_step(
    gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any,
    records: Records,
) -> None:  # fmt: skip
    fake_openai.reply(decision("act", "look up the opening hours"))
    fake_openai.reply("", tool_calls=[ScriptedCall("lookup", {"q": "hours"})])  # breaks the schema
    fake_openai.reply(decision("reply", "apologise: the catalogue is not answering"))
    fake_openai.reply("Sorry, I could not check the catalogue just now.")
    fake_openai.reply(STORY)
    async with make_runtime(gateway.model("fake:main"), chat) as rt:
        outcome = await run_turn(rt, "When do you open?")
        entries = list(rt.log.iter_forward())
    assert (outcome.reason, outcome.steps) == ("sent", 2)
    assert chat.lookups == []
    assert calls(entries) == [("send_message", {"messages": ["Sorry, I could not check the catalogue just now."]})]
    second_narrator = fake_openai.requests[2].json["messages"][-1]["content"]
    told = second_narrator.split("## What went wrong at the last step\n")[1].split("\n\n")[0]
    assert told.startswith("You chose act (look up the opening hours), but it could not be done: the arguments of")
    assert "'query' is a required property" in told
    role = records(entries, ROLE_KIND)
    assert [(e.data["role"], e.data["step"], e.data["ok"]) for e in role] == [
        ("narrator", 1, True), ("decoder", 1, False), ("narrator", 2, True), ("replyer", 2, True),
    ]  # fmt: skip
    assert role[1].data["fallback"] == "report"
    assert role[1].data["tool_calls"][0]["arguments"] == {"q": "hours"}
    assert role[2].data["parsed"]["told"] == told
    # the failed step's empty assistant message is not shown to anyone
    assert "YOU" not in second_narrator.split("## Recent events (oldest first)\n")[1].split("##")[0]


async def test_decoder_retries_run_out_then_the_next_turn_hears_of_it(
    gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any,
) -> None:  # fmt: skip
    fake_openai.reply(decision("act", "send the hours by lookup"))
    fake_openai.reply("", tool_calls=[ScriptedCall("send_message", {"messages": ["hi"]})])  # not an action tool
    fake_openai.reply(STORY)
    fake_openai.reply(decision("finish", "nothing more"))
    async with make_runtime(gateway.model("fake:main"), chat, toolcall={"decoder": {"retries": 0}}) as rt:
        first = await run_turn(rt, "When do you open?")
        await run_turn(rt, "Hello?")
    assert (first.reason, first.steps, chat.sent) == ("no_tool_calls", 1, [])
    narrator = fake_openai.requests[3].json["messages"][-1]["content"]
    assert "## What went wrong at the last step\nYou chose act (send the hours by lookup)" in narrator
    assert "called 'send_message', which is not an action tool (lookup)" in narrator


async def test_act_without_action_tools_is_a_decoder_failure_without_a_call(
    gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any,
    records: Records,
) -> None:  # fmt: skip
    chat.tools[:] = [tool for tool in chat.tools if tool.name != "lookup"]
    fake_openai.reply(decision("act", "look it up"))
    fake_openai.reply(decision("finish", "cannot act"))
    fake_openai.reply(STORY)
    async with make_runtime(gateway.model("fake:main"), chat) as rt:
        outcome = await run_turn(rt, "When do you open?")
        entries = list(rt.log.iter_forward())
    assert outcome.reason == "finish"
    assert "- act: no tools are available now" in fake_openai.requests[0].json["messages"][-1]["content"]
    decoder = records(entries, ROLE_KIND)[1]
    assert decoder.data["error"] == (
        "RoleOutputInvalid: the Narrator chose act, but this step offers no tool to act with"
    )
    assert len(fake_openai.requests) == 3  # narrator, narrator, update: the decoder was never called


@pytest.mark.parametrize("failure", ["error", "empty"])
async def test_a_replyer_failure_sends_nothing(
    failure: str, gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any,
    records: Records,
) -> None:  # fmt: skip
    fake_openai.reply(decision("reply", "greet Ana"))
    if failure == "error":
        fake_openai.error(400, "content policy")
    else:
        fake_openai.reply("<think>what to say...</think>\n  \n")
    fake_openai.reply(STORY)
    async with make_runtime(gateway.model("fake:main"), chat) as rt:
        outcome = await run_turn(rt, "Hi Kiri")
        entries = list(rt.log.iter_forward())
    assert (outcome.reason, chat.sent, calls(entries)) == ("no_tool_calls", [], [])
    replyer = records(entries, ROLE_KIND)[1]
    assert (replyer.data["role"], replyer.data["ok"], replyer.data["fallback"]) == ("replyer", False, "silent")
    expected = "ModelBadRequest: " if failure == "error" else "RoleOutputInvalid: the Replyer wrote nothing"
    assert replyer.data["error"].startswith(expected)
    assistant = next(e for e in entries if e.data.get("role") == "assistant")
    assert assistant.data["parts"] == []  # never a role's notes as text a host would send


async def test_a_failed_update_keeps_the_story_and_the_next_one_folds_both_turns(
    gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any,
    records: Records,
) -> None:  # fmt: skip
    fake_openai.reply(decision("reply", "greet Ana"))
    fake_openai.reply("Hello Ana!")
    fake_openai.reply('{"present": "Ana"}')  # not the story asked for
    fake_openai.reply(decision("reply", "answer Ana"))
    fake_openai.reply("Fine, thanks!")
    fake_openai.reply(STORY)
    async with make_runtime(gateway.model("fake:main"), chat) as rt:
        await run_turn(rt, "Hi Kiri")
        await run_turn(rt, "How are you?")
        entries = list(rt.log.iter_forward())
    (failed,) = records(entries, UPDATE_KIND)
    assert (failed.data["ok"], failed.data["reason"], failed.turn) == (False, "turn", None)
    assert failed.data["error"].startswith("RoleOutputInvalid: the narrative update lacks ['situation'")
    # the second turn still saw the first one (nothing was folded), and the second update folds both
    second_narrator = fake_openai.requests[3].json["messages"][-1]["content"]
    assert "USER: Hi Kiri" in second_narrator
    assert "YOU called send_message" in second_narrator
    update = fake_openai.requests[5].json["messages"][-1]["content"]
    assert "USER: Hi Kiri" in update
    assert "USER: How are you?" in update
    (story,) = [e for e in entries if e.type == ENTRY_TYPE]
    assert story.data["folded"] == 6  # two turns: a message, the send call, its result
