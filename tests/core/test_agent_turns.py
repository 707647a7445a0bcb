"""Turns: steps, the FIFO queue, continue_ prompts, max_steps, failures, usage and priority."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from ishiki_host.core.factlog import FactLog
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, ModelResult, Usage
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.core.turns import Turn
from ishiki_host.errors import ContextLengthExceeded, ModelRateLimited, ToolConflictError
from ishiki_host.testing.agent import BusRecorder, running
from ishiki_host.testing.models import FunctionModel, ScriptedModel, reply, tool_call


async def echo(arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
    return {"echo": arguments.get("text"), "turn": context.turn}


ECHO = Tool("echo", "Echo the text.", echo, {"type": "object", "properties": {"text": {"type": "string"}}})


def summary(log: FactLog) -> list[tuple[Any, ...]]:
    """Each entry as (type, role or event name, turn)."""
    return [(e.type, e.data.get("role") or e.data.get("name"), e.turn) for e in log.iter_forward()]


@pytest.mark.anyio
async def test_a_turn_runs_steps_until_the_model_calls_no_tool(log, make_agent, bus) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel([reply("thinking", tool_call("echo", {"text": "a"})), "all done"])
    recorder = BusRecorder(bus)
    agent = make_agent(model, tools=[ECHO])
    async with running(agent):
        await agent.send(Message.user("hi"))
        outcome = await (await agent.continue_())
    assert (outcome.turn, outcome.status, outcome.reason, outcome.steps) == (1, "done", "no_tool_calls", 2)
    assert outcome.result is not None
    assert outcome.result.text == "all done"
    assert summary(log) == [
        ("message", "user", None),
        ("event", "turn.start", 1),
        ("message", "assistant", 1),
        ("message", "tool", 1),
        ("message", "assistant", 1),
        ("event", "turn.done", 1),
    ]
    first, second = model.requests
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.messages[0].text == "You are a test."
    assert [t.name for t in first.tools] == ["echo"]
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool"]
    assert second.messages[-1].text == '{"echo": "a", "turn": 1}'
    assert recorder.names == [
        "message.appended",
        "turn.queued",
        "turn.start",
        "tool.start",
        "tool.done",
        "turn.step",
        "message.appended",  # step 1's batch, durable once the step decided to go on
        "message.appended",
        "turn.step",
        "message.appended",  # the last batch shares the turn end's sync
        "turn.done",
    ]


@pytest.mark.anyio
async def test_turns_run_one_at_a_time_in_fifo_order(log, make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    active = 0
    overlap = False

    async def answer(request: ModelRequest) -> ModelResult:
        nonlocal active, overlap
        active += 1
        overlap = overlap or active > 1
        last = request.messages[-1]
        result = reply("", tool_call("gate")) if last.text == "first" else reply(f"answered {last.text}")
        active -= 1
        return result

    agent = make_agent(FunctionModel(answer), tools=[Tool("gate", "Wait.", gate)])
    async with running(agent):
        handles = [await agent.continue_("first")]
        await gate.entered.wait()
        handles += [await agent.continue_("second"), await agent.continue_("third")]
        assert agent.busy
        assert agent.queued == 2
        gate.opened.set()
        outcomes = [await handle for handle in handles]
    assert [h.number for h in handles] == [1, 2, 3]
    assert [o.turn for o in outcomes] == [1, 2, 3]
    assert not overlap
    assert [o.result.text for o in outcomes if o.result] == ["answered opened", "answered second", "answered third"]
    starts = [e.turn for e in log.iter_forward() if e.name == "turn.start"]
    ends = [e.turn for e in log.iter_forward() if e.name == "turn.done"]
    assert starts == ends == [1, 2, 3]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("prompt", "stored"), [("Look again.", "Look again."), ("   \n", "Continue."), ("", "Continue.")]
)
async def test_a_prompt_is_appended_as_a_wake_message_of_its_turn(log, make_agent, prompt, stored) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel(["ok"])
    agent = make_agent(model)
    async with running(agent):
        await (await agent.continue_(prompt, reason="heartbeat"))
    start, wake = list(log.iter_forward())[:2]
    assert start.data["triggers"] == [{"by": "continue", "reason": "heartbeat"}]
    assert (wake.type, wake.turn, wake.data["role"], wake.data["wake"]) == ("message", 1, "user", True)
    assert Message.from_dict(wake.data).text == stored
    assert model.requests[0].messages[-1].text == stored


@pytest.mark.anyio
async def test_continue_without_prompt_appends_nothing_and_joins_a_queued_turn(log, make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel([reply("", tool_call("gate")), "first done", "second done"])
    agent = make_agent(model, tools=[Tool("gate", "Wait.", gate)])
    async with running(agent):
        first = await agent.continue_(None)
        await gate.entered.wait()
        second = await agent.continue_(None, priority="background", reason="timer", info={"beat": 3})
        third = await agent.continue_(None, reason="wakeup")
        assert second is third
        assert second.priority == "interactive"
        assert agent.queued == 1
        gate.opened.set()
        await second
    assert first.number == 1
    assert second.number == 2
    assert [e.type for e in log.iter_forward()].count("message") == 4  # no prompt message was added
    start_2 = [e for e in log.iter_forward() if e.name == "turn.start"][1]
    assert start_2.data["triggers"] == [
        {"by": "continue", "beat": 3, "reason": "timer"},
        {"by": "continue", "reason": "wakeup"},
    ]
    assert start_2.data["priority"] == "interactive"
    assert model.requests[-1].priority == "interactive"


@pytest.mark.anyio
async def test_max_steps_ends_a_turn_that_keeps_calling_tools(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    model = FunctionModel(lambda request: reply("", tool_call("echo", {"text": "again"})))
    agent = make_agent(model, tools=[ECHO], max_steps=3)
    async with running(agent):
        outcome = await (await agent.continue_("go"))
    assert (outcome.status, outcome.reason, outcome.steps) == ("done", "max_steps", 3)
    roles = [e.data.get("role") for e in log.iter_forward() if e.type == "message"]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    assert list(log.iter_forward())[-1].data == {"name": "turn.done", "reason": "max_steps", "steps": 3}


@pytest.mark.anyio
async def test_a_model_error_fails_the_turn_and_the_agent_goes_on(log, make_agent, bus) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel([ModelRateLimited("slow down", model="p:m", retry_after=3), "fine now"])
    recorder = BusRecorder(bus)
    agent = make_agent(model)
    async with running(agent):
        failed = await (await agent.continue_("one"))
        done = await (await agent.continue_("two"))
    assert (failed.status, failed.reason, failed.kind) == ("failed", "ModelRateLimited", "rate_limited")
    assert isinstance(failed.error, ModelRateLimited)
    assert failed.error.retry_after == 3
    assert done.status == "done"
    end = next(e for e in log.iter_forward() if e.name == "turn.failed")
    assert end.data == {
        "name": "turn.failed",
        "reason": "ModelRateLimited",
        "steps": 1,
        "error": "ModelRateLimited",
        "message": "slow down",
        "kind": "rate_limited",
    }
    assert recorder.named("turn.failed")[0]["outcome"] is failed


@pytest.mark.anyio
async def test_a_context_length_error_reaches_the_owner_with_its_error(make_agent) -> None:  # type: ignore[no-untyped-def]
    error = ContextLengthExceeded("too long", model="p:m", status=413)
    agent = make_agent(ScriptedModel([error]))
    async with running(agent):
        outcome = await (await agent.continue_("hi"))
    assert outcome.kind == "context_length"
    assert outcome.error is error


@pytest.mark.anyio
async def test_a_failing_setup_fails_the_turn(log, bus, fake_clock) -> None:  # type: ignore[no-untyped-def]
    from ishiki_host.core.agent import Agent
    from ishiki_host.core.turns import TurnSetup

    def setup(turn: Any) -> TurnSetup:
        if turn.number == 1:
            raise RuntimeError("extension exploded")
        return TurnSetup(tools=[ECHO, ECHO])

    agent = Agent(log, ScriptedModel([]), setup, bus=bus, clock=fake_clock)
    async with running(agent):
        first = await (await agent.continue_("a"))
        second = await (await agent.continue_("b"))
    assert (first.status, first.reason, str(first.error)) == ("failed", "RuntimeError", "extension exploded")
    assert second.reason == "ToolConflictError"
    assert isinstance(second.error, ToolConflictError)
    assert "'echo'" in str(second.error)


@pytest.mark.anyio
async def test_usage_and_model_are_recorded_per_assistant_message(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel(
        [
            reply("", tool_call("echo", {}), usage=Usage(100, 5), model="openai:gpt"),
            reply("done", usage=Usage(120, 7, estimated=True)),
        ]
    )
    agent = make_agent(model, tools=[ECHO])
    async with running(agent):
        outcome = await (await agent.continue_("hi"))
    assistants = [e.data for e in log.iter_forward() if e.data.get("role") == "assistant"]
    assert assistants[0]["usage"] == {"input_tokens": 100, "output_tokens": 5, "estimated": False}
    assert assistants[0]["model"] == "openai:gpt"
    assert assistants[1]["model"] == "test:scripted"
    assert assistants[1]["usage"]["estimated"] is True
    assert outcome.usage == Usage(220, 12, estimated=True)
    assert list(log.iter_forward())[-1].data["usage"] == {"input_tokens": 220, "output_tokens": 12, "estimated": True}


@pytest.mark.anyio
async def test_priority_reaches_the_model_request(make_agent) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel(["a", "b"])
    agent = make_agent(model)
    async with running(agent):
        await (await agent.continue_("x", priority="background"))
        await (await agent.continue_("y"))
    assert [r.priority for r in model.requests] == ["background", "interactive"]


@pytest.mark.anyio
async def test_turn_numbers_continue_across_restarts(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    async with running(make_agent(ScriptedModel(["a", "b"]))) as agent:
        await (await agent.continue_("x"))
        await (await agent.continue_("y"))
    async with running(make_agent(ScriptedModel(["c"]))) as agent:
        handle = await agent.continue_("z")
        await handle
    assert handle.number == 3


@pytest.mark.anyio
async def test_the_window_starts_at_the_last_session_boundary(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel(["ok"])
    await log.append("message", Message.user("old").to_dict())
    await log.append("session", {"reason": "compact", "summary": "we talked about cats"})
    await log.append("message", Message.user("new").to_dict())
    async with running(make_agent(model)) as agent:
        await (await agent.continue_())
    texts = [m.text for m in model.requests[0].messages]
    assert texts == ["You are a test.", "Summary of the conversation so far:\nwe talked about cats", "new"]


@pytest.mark.anyio
async def test_wait_idle_returns_once_turns_and_queue_are_done(make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    agent = make_agent(ScriptedModel([reply("", tool_call("gate")), "done", "again"]), tools=[Tool("gate", "", gate)])
    idle = False

    async def wait() -> None:
        nonlocal idle
        await agent.wait_idle()
        idle = True

    async with running(agent):
        await agent.wait_idle()  # nothing to wait for
        first = await agent.continue_("a")
        second = await agent.continue_("b")
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await gate.entered.wait()
            assert not idle
            gate.opened.set()
        assert idle
        assert first.done
        assert second.done


@pytest.mark.anyio
async def test_an_idle_agent_keeps_nothing_of_its_last_turn(log, make_agent, bus) -> None:  # type: ignore[no-untyped-def]
    # Its steps hold every request: the whole context window, the tool specs and the results.
    turns: list[weakref.ref[Turn]] = []
    bus.subscribe("turn.start", lambda event: turns.append(weakref.ref(event["turn"])))
    agent = make_agent(ScriptedModel([reply("", tool_call("echo", {"text": "x"})), "done"]), tools=[ECHO])
    async with running(agent):
        outcome = await (await agent.continue_("go"))
        assert outcome.status == "done"
        await agent.wait_idle()
        gc.collect()
        assert len(turns) == 1
        assert turns[0]() is None


@pytest.mark.anyio
async def test_a_finished_turn_is_freed_without_the_garbage_collector(log, make_agent, bus) -> None:  # type: ignore[no-untyped-def]
    # Its steps point back at it; once it ends they are let go, so reference counting frees the turn, its steps
    # and their requests and results at once (the collector would find them only at its next run).
    turns: list[weakref.ref[Turn]] = []
    seen: list[int] = []
    bus.subscribe("turn.start", lambda event: turns.append(weakref.ref(event["turn"])))
    bus.subscribe("turn.done", lambda event: seen.append(len(turns[0]().steps)))  # type: ignore[union-attr]
    agent = make_agent(ScriptedModel([reply("", tool_call("echo", {"text": "x"})), "done"]), tools=[ECHO])
    gc.disable()
    try:
        async with running(agent):
            outcome = await (await agent.continue_("go"))
            await agent.wait_idle()
            assert (outcome.status, outcome.steps, seen) == ("done", 2, [2])  # the end event still sees both steps
            assert turns[0]() is None
    finally:
        gc.enable()
