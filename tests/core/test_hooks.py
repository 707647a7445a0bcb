"""Hook points: the order they run in, how several compose, and what each decision does."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest

from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.hooks import AgentHooks, Block, Replace, Stop
from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.tools import Tool, ToolContext, ToolResult
from ishiki_host.core.turns import Step, TurnOutcome
from ishiki_host.testing.agent import BusRecorder, running
from ishiki_host.testing.models import ScriptedModel, reply, tool_call

handled: list[str] = []


async def act(arguments: Mapping[str, Any], context: ToolContext) -> str:
    handled.append(context.call.id)
    return "acted"


ACT = Tool("act", "Act.", act)
OTHER = Tool("other", "Other.", act)


@pytest.fixture(autouse=True)
def _clear() -> None:
    handled.clear()


class Tracer(AgentHooks):
    """Records every hook call as ``<name>.<hook>``."""

    def __init__(self, name: str, trace: list[str]):
        self.name = name
        self.trace = trace

    def note(self, hook: str) -> None:
        self.trace.append(f"{self.name}.{hook}")

    async def transform_entries(self, entries: list[Entry], step: Step) -> list[Entry]:
        self.note("transform_entries")
        return entries

    async def transform_messages(self, messages: list[Message], step: Step) -> list[Message]:
        self.note("transform_messages")
        return messages

    async def prepare_step(self, step: Step) -> None:
        self.note("prepare_step")

    async def before_tool_call(self, call: ToolCall, step: Step) -> None:
        self.note("before_tool_call")

    async def after_tool_call(self, call: ToolCall, result: ToolResult, step: Step) -> ToolResult:
        self.note("after_tool_call")
        return result

    async def on_step_finish(self, step: Step) -> None:
        self.note("on_step_finish")

    async def on_turn_finish(self, outcome: TurnOutcome) -> None:
        self.note("on_turn_finish")


class Window(Tracer):
    async def select_entries(self, log: FactLog, step: Step) -> list[Entry]:
        self.note("select_entries")
        return await super().select_entries(log, step)

    async def project(self, entries: list[Entry], step: Step) -> list[Message]:
        self.note("project")
        return await super().project(entries, step)


@pytest.mark.anyio
async def test_hooks_run_in_order_at_their_points(make_agent) -> None:  # type: ignore[no-untyped-def]
    trace: list[str] = []
    agent = make_agent(
        ScriptedModel([reply("", tool_call("act")), "done"]),
        tools=[ACT],
        hooks=[Window("a", trace), Tracer("b", trace)],
    )
    async with running(agent):
        await (await agent.continue_("go"))
    step = [
        "a.select_entries",
        "a.transform_entries",
        "b.transform_entries",
        "a.project",
        "a.transform_messages",
        "b.transform_messages",
        "a.prepare_step",
        "b.prepare_step",
    ]
    tool = ["a.before_tool_call", "b.before_tool_call", "a.after_tool_call", "b.after_tool_call"]
    finish = ["a.on_step_finish", "b.on_step_finish"]
    assert trace == [*step, *tool, *finish, *step, *finish, "a.on_turn_finish", "b.on_turn_finish"]


def test_only_one_hook_object_may_own_the_window_or_the_projection(make_agent) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="only one hook object may override select_entries; these do: Window, Window"):
        make_agent(ScriptedModel([]), hooks=[Window("a", []), Window("b", [])])


@pytest.mark.anyio
async def test_block_and_replace_answer_a_call_without_running_it(log, make_agent, bus) -> None:  # type: ignore[no-untyped-def]
    class Gatekeeper(AgentHooks):
        async def before_tool_call(self, call: ToolCall, step: Step) -> Any:
            if call.id == "blocked":
                return Block("not in this channel")
            if call.id == "replaced":
                return Replace(ToolResult("from cache"))
            return None

    class Never(AgentHooks):
        async def before_tool_call(self, call: ToolCall, step: Step) -> Any:
            return Block("the first decision should have won") if call.id != "ran" else None

    recorder = BusRecorder(bus)
    calls = [tool_call("act", id="blocked"), tool_call("act", id="replaced"), tool_call("act", id="ran")]
    agent = make_agent(ScriptedModel([reply("", *calls), "ok"]), tools=[ACT], hooks=[Gatekeeper(), Never()])
    async with running(agent):
        await (await agent.continue_("go"))
    tool_entries = [e for e in log.iter_forward() if e.data.get("role") == "tool"]
    texts = [(m.text, m.is_error) for m in (Message.from_dict(e.data) for e in tool_entries)]
    assert texts == [("blocked: not in this channel", True), ("from cache", False), ("acted", False)]
    assert handled == ["ran"]
    assert [(e["call"].id, e["reason"]) for e in recorder.named("tool.blocked")] == [("blocked", "not in this channel")]


@pytest.mark.anyio
async def test_after_tool_call_hooks_chain(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    class Suffix(AgentHooks):
        def __init__(self, suffix: str):
            self.suffix = suffix

        async def after_tool_call(self, call: ToolCall, result: ToolResult, step: Step) -> ToolResult:
            return ToolResult(result.content + self.suffix, result.is_error, result.data)

    agent = make_agent(
        ScriptedModel([reply("", tool_call("act")), "ok"]), tools=[ACT], hooks=[Suffix("+1"), Suffix("+2")]
    )
    async with running(agent):
        await (await agent.continue_("go"))
    assert [e.data["parts"][0]["text"] for e in log.iter_forward() if e.data.get("role") == "tool"] == ["acted+1+2"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("decision", "reason", "steps"),
    [(Stop("sent"), "sent", 1), ("stop", "stop_hook", 1), (None, "no_tool_calls", 2)],
)
async def test_on_step_finish_may_end_a_turn_early(make_agent, decision, reason, steps) -> None:  # type: ignore[no-untyped-def]
    class Decide(AgentHooks):
        async def on_step_finish(self, step: Step) -> Any:
            return decision

    agent = make_agent(ScriptedModel([reply("", tool_call("act")), "done"]), tools=[ACT], hooks=[Decide()])
    async with running(agent):
        outcome = await (await agent.continue_("go"))
    assert (outcome.reason, outcome.steps) == (reason, steps)


@pytest.mark.anyio
async def test_continue_runs_another_step_without_tool_calls(make_agent) -> None:  # type: ignore[no-untyped-def]
    class Twice(AgentHooks):
        async def on_step_finish(self, step: Step) -> Any:
            return "continue" if step.index == 1 else None

    agent = make_agent(ScriptedModel(["first", "second"]), hooks=[Twice()])
    async with running(agent):
        outcome = await (await agent.continue_("go"))
    assert (outcome.reason, outcome.steps, outcome.result.text) == ("no_tool_calls", 2, "second")  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_prepare_step_narrows_the_tools_and_sets_the_choice(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    class OnlyAct(AgentHooks):
        async def prepare_step(self, step: Step) -> None:
            step.tools = [tool for tool in step.tools if tool.name == "act"]
            step.tool_choice = "act"
            step.max_tokens = 50

    model = ScriptedModel([reply("", tool_call("other")), "ok"])
    agent = make_agent(model, tools=[ACT, OTHER], hooks=[OnlyAct()])
    async with running(agent):
        await (await agent.continue_("go"))
    request = model.requests[0]
    assert [t.name for t in request.tools] == ["act"]
    assert request.tool_choice == "act"
    assert request.max_tokens == 50
    result = next(Message.from_dict(e.data) for e in log.iter_forward() if e.data.get("role") == "tool")
    assert result.text == "unknown tool 'other'; available tools: act"
    assert handled == []


@pytest.mark.anyio
async def test_transforms_see_the_system_prompt_and_change_the_request_not_the_log(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    class Rewrite(AgentHooks):
        async def transform_entries(self, entries: list[Entry], step: Step) -> list[Entry]:
            return [e for e in entries if e.data.get("role") != "user" or "secret" not in str(e.data)]

        async def transform_messages(self, messages: list[Message], step: Step) -> list[Message]:
            assert messages[0].role == "system"
            return [Message.system(messages[0].text + " Be brief."), *messages[1:]]

    await log.append("message", Message.user("a secret").to_dict())
    model = ScriptedModel(["ok"])
    agent = make_agent(model, hooks=[Rewrite()])
    async with running(agent):
        await (await agent.continue_("public"))
    assert [m.text for m in model.requests[0].messages] == ["You are a test. Be brief.", "public"]
    assert "a secret" in str([e.data for e in log.iter_forward()])


@pytest.mark.anyio
async def test_a_failing_hook_fails_the_turn_but_on_turn_finish_only_logs(make_agent, caplog) -> None:  # type: ignore[no-untyped-def]
    class Broken(AgentHooks):
        async def prepare_step(self, step: Step) -> None:
            raise KeyError("missing")

        async def on_turn_finish(self, outcome: TurnOutcome) -> None:
            raise RuntimeError("observer broke")

    agent = make_agent(ScriptedModel([]), hooks=[Broken()])
    with caplog.at_level(logging.ERROR):
        async with running(agent):
            outcome = await (await agent.continue_("go"))
            second = await (await agent.continue_("again"))
    assert (outcome.status, outcome.reason) == ("failed", "KeyError")
    assert second.status == "failed"
    assert "on_turn_finish" in caplog.text
    assert "observer broke" in caplog.text
