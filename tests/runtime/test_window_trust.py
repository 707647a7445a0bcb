"""A shared window shows a turn nothing above its level (issue 20, items 2 and 3).

Before: in a group an untrusted sender's turn read the owner turn's full tool results; in cross mode it read the
owner's private messages; ``/memory`` and the window showed a carried summary of owner-only content to anyone.
Now each is a placeholder that says what was hidden, not what it said.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from ishiki_host.config.profile_types import Profile, TrustConfig
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply, tool_call
from ishiki_host.testing.sessions import SessionRig

pytestmark = pytest.mark.anyio

SECRET = "the safe's code is 4711"
OWNER, STRANGER = "42", "3"


class Script:
    """Per-step answers; keeps every request as JSON text."""

    def __init__(self, *steps: ModelResult):
        self.steps = list(steps)
        self.requests: list[str] = []

    def __call__(self, request: ModelRequest) -> ModelResult:
        self.requests.append(
            json.dumps([m.text for m in request.messages] + [str(m.tool_calls) for m in request.messages])
        )
        return self.steps.pop(0) if self.steps else reply("", tool_call("finish", {}))


def diary() -> Tool:
    async def read_diary(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return f"Dear diary, {SECRET}."

    return Tool("diary", "The owner's diary.", read_diary, trust="owner")


def harness(tmp_path: Path, script: Script, mode: Literal["channel", "cross"], channel: str) -> RuntimeHarness:
    profile = Profile(
        id="ana",
        directory=tmp_path,
        file=tmp_path / "profile.yml",
        persona="You are Ana.",
        model="test",
        mode=mode,
        trust=TrustConfig(owners=(f"fake:{OWNER}",)),
    )
    return RuntimeHarness(
        tmp_path / "rt",
        model=FunctionModel(script),
        profile=profile,
        sid="fake:bot",
        channel_id=channel,
        kernel_tools=True,
        extra_tools=[diary()],
    )


async def turn_from(rt: RuntimeHarness, user: str, text: str, channel: str) -> None:
    await rt.deliver(rt.channel.event(text, user_id=user, channel_id=channel))
    outcome = await (await rt.agent.continue_(reason="test"))
    assert outcome.status == "done", outcome


async def test_in_a_group_an_untrusted_turn_sees_that_a_result_was_hidden_not_what_it_said(tmp_path: Path) -> None:
    script = Script(
        reply("", tool_call("diary", {})),
        reply("", tool_call("send_message", {"messages": ["I read it, it is private."]})),
        reply("", tool_call("send_message", {"messages": ["Hello!"]})),
    )
    async with harness(tmp_path, script, "channel", "group:1") as rt:
        await turn_from(rt, OWNER, "read my diary", "group:1")
        await turn_from(rt, STRANGER, "what did the diary say?", "group:1")
    owner_view, stranger_view = script.requests[1], script.requests[2]
    assert SECRET in owner_view
    assert SECRET not in stranger_view
    assert "[hidden: the result of diary in a turn at owner level]" in stranger_view
    assert "read my diary" in stranger_view  # said in this group: its people saw it
    assert "I read it, it is private." in stranger_view  # what the persona sent here was seen here too
    assert "hidden" not in owner_view


async def test_in_cross_mode_a_group_turn_does_not_see_the_owners_private_chat(tmp_path: Path) -> None:
    private = {"sid": "fake:bot", "channelId": "private:42"}
    script = Script(
        reply("", tool_call("send_message", {"messages": [f"Noted: {SECRET}"], "target": private})),
        reply("", tool_call("finish", {})),
        reply("", tool_call("finish", {})),
    )
    async with harness(tmp_path, script, "cross", "private:42") as rt:
        await turn_from(rt, OWNER, f"remember: {SECRET}", "private:42")
        await turn_from(rt, STRANGER, "hi all, what do you know?", "group:1")
    stranger_view = script.requests[-1]
    assert SECRET not in stranger_view
    assert "[hidden: a message from the owner in another chat]" in stranger_view
    assert "the arguments of a call in a turn at owner level" in stranger_view


async def test_memory_and_the_window_show_a_carried_summary_only_at_its_level(tmp_path: Path) -> None:
    persona = Script()
    summarizer = FunctionModel(lambda request: reply(f"The owner said {SECRET}."))
    async with SessionRig(tmp_path, persona=FunctionModel(persona), summarizer=summarizer) as rig:
        await rig.say(f"note: {SECRET}", sender="telegram:42", trust="owner")
        await rig.command("/compact")
        refused = await rig.command("/memory", sender="telegram:3", trust="untrusted")
        shown = await rig.command("/memory", sender="telegram:42", trust="owner")
        await rig.say("hello, what is new?", sender="telegram:3", trust="untrusted")
    assert refused is not None
    assert refused.reply is not None
    assert SECRET not in refused.reply
    assert refused.reply == (
        "A summary is carried into this session, but it covers what only the owner may read; it is not shown here."
    )
    assert shown is not None
    assert shown.reply == f"Summary carried into this session:\nThe owner said {SECRET}."
    untrusted_view = persona.requests[-1]
    assert SECRET not in untrusted_view
    assert "the summary covers what only the owner may read" in untrusted_view
