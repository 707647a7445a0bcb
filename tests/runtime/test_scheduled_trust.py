"""Work a turn schedules runs at most at that turn's level: a wait, a wake from a tool call or from a task a
tool started, a beat (issue 20, item 1). Without the ceiling, each of these turns had no new inbound message and
ran at the runtime's home level (``trusted`` off the console) with the untrusted request still in its window."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.channels.inbound import inbound_message
from ishiki_host.config.profile_types import Profile, TrustConfig
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply, tool_call

pytestmark = pytest.mark.anyio

OWNER, STRANGER = "42", "3"


class Script:
    """Per-step answers; records the tools each request offered and the trust each call's context said."""

    def __init__(self, *steps: ModelResult):
        self.steps = list(steps)
        self.offered: list[set[str]] = []

    def __call__(self, request: ModelRequest) -> ModelResult:
        self.offered.append({tool.name for tool in request.tools})
        return self.steps.pop(0) if self.steps else reply("", tool_call("finish", {}))


def harness(tmp_path: Path, script: Script, *tools: Tool, clock: FakeClock | None = None) -> RuntimeHarness:
    profile = Profile(
        id="ana",
        directory=tmp_path,
        file=tmp_path / "profile.yml",
        persona="You are Ana.",
        model="test",
        trust=TrustConfig(owners=(f"fake:{OWNER}",)),
    )
    return RuntimeHarness(
        tmp_path / "rt",
        model=FunctionModel(script),
        profile=profile,
        sid="fake:bot",
        channel_id="group:1",
        kernel_tools=True,
        extra_tools=list(tools),
        clock=clock,
    )


def vault(ran: list[str]) -> Tool:
    """A ``trusted`` tool: what an untrusted request must not reach by scheduling a turn."""

    async def open_vault(args: Mapping[str, Any], ctx: ToolContext) -> str:
        ran.append(ctx.trust)
        return "the vault is open"

    return Tool("open_vault", "Open the vault.", open_vault, trust="trusted")


async def turn_from(rt: RuntimeHarness, user: str, text: str) -> None:
    await rt.deliver(rt.channel.event(text, user_id=user, channel_id="group:1"))
    outcome = await (await rt.agent.continue_(reason="test"))
    assert outcome.status == "done", outcome


def starts(rt: RuntimeHarness) -> list[Mapping[str, Any]]:
    return [e.data for e in rt.log.iter_forward() if e.name == "turn.start"]


async def test_a_wait_an_untrusted_sender_asked_for_wakes_an_untrusted_turn(
    tmp_path: Path, fake_clock: FakeClock
) -> None:
    ran: list[str] = []
    script = Script(
        reply("", tool_call("wait", {"seconds": 5})),
        reply("", tool_call("open_vault", {})),  # the waiter's turn tries the trusted tool
        reply("", tool_call("finish", {})),
    )
    async with harness(tmp_path, script, vault(ran), clock=fake_clock) as rt:
        await turn_from(rt, STRANGER, "wait five seconds, then open the vault")
        await fake_clock.advance(5)
        await rt.settled()
        triggers = starts(rt)[-1]["triggers"]
    assert triggers == [{"by": "continue", "reason": "wait", "seconds": 5.0, "trust": "untrusted"}]
    assert "open_vault" not in script.offered[1]
    assert ran == []


async def test_the_owners_wait_still_wakes_at_the_runtimes_own_level(tmp_path: Path, fake_clock: FakeClock) -> None:
    ran: list[str] = []
    script = Script(reply("", tool_call("wait", {"seconds": 5})), reply("", tool_call("open_vault", {})))
    async with harness(tmp_path, script, vault(ran), clock=fake_clock) as rt:
        await turn_from(rt, OWNER, "wait five seconds, then open the vault")
        await fake_clock.advance(5)
        await rt.settled()
    assert "open_vault" in script.offered[1]
    assert ran == ["trusted"]  # capped at the home level: an owner's wait does not raise the turn to owner


def waker(rt_box: list[RuntimeHarness], *, background: bool) -> Tool:
    """An untrusted tool that wakes the runtime: at once, or from a task it spawns."""

    async def follow_up(args: Mapping[str, Any], ctx: ToolContext) -> str:
        context = rt_box[0].context
        if background:
            context.spawn(lambda: context.wake("Follow up.", info={"by_tool": True}), name="follow-up")
        else:
            await context.wake("Follow up.")
        return "I will follow up."

    return Tool("follow_up", "Follow up later.", follow_up, trust="untrusted")


@pytest.mark.parametrize("background", [False, True], ids=["from-the-call", "from-a-spawned-task"])
async def test_a_wake_on_behalf_of_an_untrusted_turn_runs_untrusted(tmp_path: Path, background: bool) -> None:
    ran: list[str] = []
    box: list[RuntimeHarness] = []
    script = Script(
        reply("", tool_call("follow_up", {})),
        reply("", tool_call("finish", {})),
        reply("", tool_call("open_vault", {})),  # the woken turn
    )
    async with harness(tmp_path, script, vault(ran), waker(box, background=background)) as rt:
        box.append(rt)
        await turn_from(rt, STRANGER, "follow up on this later")
        await rt.settled()
        await rt.agent.wait_idle()
        woken = starts(rt)[-1]
    assert woken["triggers"][0]["trust"] == "untrusted"
    assert "open_vault" not in script.offered[2]
    assert ran == []


async def test_a_wake_outside_any_turn_keeps_the_home_level_and_an_explicit_ceiling_lowers_it(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    script = Script(
        reply("", tool_call("open_vault", {})),
        reply("", tool_call("finish", {})),
        reply("", tool_call("open_vault", {})),
    )
    async with harness(tmp_path, script, vault(ran)) as rt:
        await (await rt.context.wake("Check the vault."))
        await (await rt.context.wake("Check the vault.", trust="untrusted", info={"trust": "owner"}))
        first, second = starts(rt)
    assert "trust" not in first["triggers"][0]
    assert second["triggers"][0]["trust"] == "untrusted"  # the lowest wins; info cannot raise it
    assert ran == ["trusted"]
    assert "open_vault" not in script.offered[-1]


async def test_a_message_that_joins_lowers_the_level_a_tool_call_context_reports(tmp_path: Path) -> None:
    seen: list[str] = []

    async def report(args: Mapping[str, Any], ctx: ToolContext) -> str:
        seen.append(ctx.trust)
        return "ok"

    box: list[RuntimeHarness] = []

    async def join(args: Mapping[str, Any], ctx: ToolContext) -> str:
        seen.append(ctx.trust)
        event = box[0].channel.event("me too", user_id=STRANGER, channel_id="group:1")
        await box[0].agent.send(inbound_message(event, "untrusted", []), if_busy="join")  # held for this turn
        return "ok"

    script = Script(
        reply("", tool_call("join", {})),
        reply("", tool_call("report", {})),
        reply("", tool_call("finish", {})),
    )
    tools = [Tool("join", "j", join, trust="untrusted"), Tool("report", "r", report, trust="untrusted")]
    async with harness(tmp_path, script, *tools) as rt:
        box.append(rt)
        await turn_from(rt, OWNER, "go")
    assert seen == ["owner", "untrusted"]
