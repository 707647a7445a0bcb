"""The story survives a restart: a new runtime on the same fact log resumes from the newest narrative entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ishiki_host.testing import FakeOpenAIServer, Gateway

from ishiki_engine_narrative import ENTRY_TYPE

pytestmark = pytest.mark.anyio

STORY = {
    "present": ["Ana"],
    "situation": "Ana is looking for a book about Kyoto gardens; Kiri promised to check the shelves.",
    "threads": ["find the Kyoto gardens book for Ana"],
    "intent": "Tell Ana whether the book is on the shelf",
}


def decision(intent: str, rationale: str) -> str:
    return json.dumps({"intent": intent, "rationale": rationale})


async def test_a_restarted_runtime_resumes_from_the_last_narrative(
    gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any, tmp_path: Path
) -> None:
    home = tmp_path / "kiri-home"
    context = {"recent_messages": 0}
    fake_openai.reply(decision("reply", "promise to check the shelves"))
    fake_openai.reply("Let me check the shelves for you!")
    fake_openai.reply(json.dumps(STORY))
    async with make_runtime(gateway.model("fake:main"), chat, context=context, home=home) as rt:
        await run_turn(rt, "Do you have the book about Kyoto gardens?")
    fake_openai.requests.clear()

    fake_openai.reply(decision("reply", "say the book is on shelf 3"))
    fake_openai.reply("Found it: shelf 3!")
    fake_openai.reply(json.dumps({**STORY, "threads": []}))
    async with make_runtime(gateway.model("fake:main"), chat, context=context, home=home) as rt:
        outcome = await run_turn(rt, "Any luck?")
        entries = list(rt.log.iter_forward())
    assert outcome.reason == "sent"
    narrator = fake_openai.requests[0].json["messages"][-1]["content"]
    story, events = narrator.split("## Recent events (oldest first)\n")
    # the story comes from the first runtime's narrative entry, given once (the system prompt's copy is
    # replaced by the freshest one) ...
    assert "Ana is looking for a book about Kyoto gardens" in story
    assert "- find the Kyoto gardens book for Ana" in story
    assert narrator.count("Present: Ana") == 1
    assert '<narrative entry="' not in narrator
    # ... and the window holds only what came after it
    assert "Kyoto gardens?" not in events
    assert "USER: Any luck?" in events
    assert chat.sent[-1] == ["Found it: shelf 3!"]
    stories = [e for e in entries if e.type == ENTRY_TYPE]
    assert [s.data["after_turn"] for s in stories] == [1, 2]
    assert stories[1].data["threads"] == []


async def test_instructions_give_the_current_story(
    gateway: Gateway, fake_openai: FakeOpenAIServer, make_runtime: Any, chat: Any, run_turn: Any
) -> None:
    fake_openai.reply(decision("finish", "nothing to say yet"))
    fake_openai.reply(json.dumps(STORY))
    rt = make_runtime(gateway.model("fake:main"), chat)
    async with rt:
        assert await rt.engines.context.instructions() is None
        await run_turn(rt, "hello?")
        entry = next(e for e in rt.log.iter_forward() if e.type == ENTRY_TYPE)
        section = await rt.engines.context.instructions()
    assert section.startswith(f'<narrative entry="{entry.id}">\n## The story so far\nPresent: Ana\n')
    assert section.endswith("The persona's current intent: Tell Ana whether the book is on the shelf\n</narrative>")
