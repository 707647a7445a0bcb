"""What the runtime (issue 4) builds on the agent, expressed with its public hooks and API only.

A stop rule (``finish``, or a step whose only calls were successful sends), ``reply_with_text``, a wakeup
engine that decides after ``message.appended`` and re-decides what a turn never saw, and the wake decision
re-run for messages a crash left unanswered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from ishiki_host.core.agent import Agent
from ishiki_host.core.bus import BusEvent
from ishiki_host.core.hooks import AgentHooks, Stop
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.core.turns import Step, TurnOutcome
from ishiki_host.errors import ToolError
from ishiki_host.testing.agent import running
from ishiki_host.testing.models import FunctionModel, reply, tool_call


class Channel:
    """A fake channel: what was sent to it."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send_message(self, arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        if not arguments["messages"]:
            raise ToolError("messages must not be empty")
        self.sent.extend(arguments["messages"])
        return {"ok": True, "ids": list(range(len(self.sent) - len(arguments["messages"]), len(self.sent)))}


async def finish(arguments: Mapping[str, Any], context: ToolContext) -> str:
    return "finished"


class RuntimeHooks(AgentHooks):
    """The runtime's stop rule and reply_with_text."""

    def __init__(self, channel: Channel):
        self.channel = channel

    async def on_step_finish(self, step: Step) -> Stop | None:
        assert step.result is not None
        if any(r.call.name == "finish" and r.status == "ran" for r in step.calls):
            return Stop("finish")
        if step.calls and all(r.tool and r.tool.kind == "send" and not r.result.is_error for r in step.calls):
            return Stop("sent")
        if not step.result.tool_calls and step.result.text:
            self.channel.sent.append(step.result.text)  # reply_with_text
        return None


class WakeEngine:
    """Wakes for every inbound user message; re-decides entries a turn never saw."""

    def __init__(self, agent: Agent):
        self.agent = agent
        self.decided: list[int] = []
        agent.bus.subscribe("message.appended", self.on_appended)
        agent.bus.subscribe("turn.done", self.on_turn_end)

    async def decide(self, entry_id: int, data: Mapping[str, Any]) -> None:
        if data.get("role") == "user" and not data.get("wake"):
            self.decided.append(entry_id)
            await self.agent.continue_(None, reason="wakeup", info={"entry": entry_id})

    async def on_appended(self, event: BusEvent) -> None:
        if not event["joined"]:  # joined entries are the running turn's; re-decided if it never saw them
            await self.decide(event["entry"].id, event["entry"].data)

    async def on_turn_end(self, event: BusEvent) -> None:
        outcome: TurnOutcome = event["outcome"]
        for entry in outcome.unseen:
            await self.decide(entry.id, entry.data)


def model_fn(request: ModelRequest) -> ModelResult:
    last = request.messages[-1]
    if last.role == "user" and last.text == "just chat":
        return reply("plain text answer")
    assert last.role == "user", "the stop rule ends every turn after its first send"
    return reply("", tool_call("send_message", {"messages": [f"re: {last.text}"]}))


def tools(channel: Channel) -> list[Tool]:
    schema = {"type": "object", "properties": {"messages": {"type": "array", "items": {"type": "string"}}}}
    return [Tool("send_message", "Send.", channel.send_message, schema, kind="send"), Tool("finish", "End.", finish)]


@pytest.mark.anyio
async def test_stop_rule_reply_with_text_and_wakeup_after_append(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    channel = Channel()
    agent = make_agent(FunctionModel(model_fn), tools=tools(channel), hooks=[RuntimeHooks(channel)])
    engine = WakeEngine(agent)
    async with running(agent):
        await agent.send(Message.user("hello"))  # deliver: ingest only, the engine decides
        await agent.wait_idle()
        await agent.send(Message.user("just chat"))
        await agent.wait_idle()
    assert channel.sent == ["re: hello", "plain text answer"]
    ends = [e.data["reason"] for e in log.iter_forward() if e.name == "turn.done"]
    assert ends == ["sent", "no_tool_calls"]
    assert engine.decided == [1, 6]


@pytest.mark.anyio
async def test_a_failed_send_does_not_end_the_turn_and_finish_does(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    channel = Channel()

    def model(request: ModelRequest) -> ModelResult:
        last = request.messages[-1]
        return (
            reply("", tool_call("finish", {}))
            if last.is_error
            else reply("", tool_call("send_message", {"messages": []}))
        )

    agent = make_agent(FunctionModel(model), tools=tools(channel), hooks=[RuntimeHooks(channel)])
    async with running(agent):
        outcome = await (await agent.continue_("go"))
    assert (outcome.reason, outcome.steps) == ("finish", 2)


@pytest.mark.anyio
async def test_a_message_the_turn_never_saw_is_answered_after_it(log, make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    channel = Channel()

    def model(request: ModelRequest) -> ModelResult:
        last = request.messages[-1]
        if last.role == "user" and last.text == "first":
            return reply("", tool_call("slow_send", {"messages": ["re: first"]}))
        if last.role == "user":
            return reply("", tool_call("send_message", {"messages": [f"re: {last.text}"]}))
        raise AssertionError(f"unexpected request ending with {last}")

    async def slow_send(arguments: Mapping[str, Any], context: ToolContext) -> Any:
        await gate(arguments, context)
        return await channel.send_message(arguments, context)

    surface = [*tools(channel), Tool("slow_send", "Send slowly.", slow_send, kind="send")]
    agent = make_agent(FunctionModel(model), tools=surface, hooks=[RuntimeHooks(channel)])
    engine = WakeEngine(agent)
    async with running(agent):
        await agent.send(Message.user("first"))
        await gate.entered.wait()
        await agent.send(Message.user("second"))  # joins turn 1, which ends after this step ("sent")
        gate.opened.set()
        await agent.wait_idle()
    assert channel.sent == ["re: first", "re: second"]
    assert engine.decided == [1, 5]  # "second" (entry 5) decided after turn 1 ended without seeing it


@pytest.mark.anyio
async def test_messages_a_crash_left_unanswered_are_decided_again(log_path, fake_clock) -> None:  # type: ignore[no-untyped-def]
    from ishiki_host.core.factlog import FactLog
    from ishiki_host.core.turns import TurnSetup

    async with await FactLog.open(log_path, clock=fake_clock) as log:
        await log.append("message", Message.user("are you there?").to_dict())
        await log.append("event", {"name": "turn.start", "priority": "interactive", "triggers": []}, turn=1)
    channel = Channel()
    async with await FactLog.open(log_path, clock=fake_clock) as log:
        agent = Agent(
            log, FunctionModel(model_fn), lambda turn: TurnSetup(tools=tools(channel)), hooks=[RuntimeHooks(channel)]
        )
        engine = WakeEngine(agent)
        async with running(agent):
            assert agent.recovered is not None
            for entry in agent.recovered.unanswered:
                await engine.decide(entry.id, entry.data)
            await agent.wait_idle()
    assert channel.sent == ["re: are you there?"]
