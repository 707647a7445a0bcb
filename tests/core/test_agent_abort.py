"""Ending turns early: abort, interrupt, stop and cancellation all leave every tool call answered."""

from __future__ import annotations

import anyio
import pytest

from ishiki_host.core.factlog import FactLog
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.core.tools import Tool
from ishiki_host.testing.agent import BusRecorder, running
from ishiki_host.testing.models import FunctionModel, ScriptedModel, reply, tool_call


def tool_results(log: FactLog) -> dict[str, tuple[str, bool]]:
    out = {}
    for entry in log.iter_forward():
        if entry.data.get("role") == "tool":
            message = Message.from_dict(entry.data)
            out[str(message.tool_call_id)] = (message.text, message.is_error)
    return out


def calls(log: FactLog) -> list[str]:
    return [c["id"] for e in log.iter_forward() for c in e.data.get("tool_calls", ())]


@pytest.mark.anyio
async def test_abort_mid_tool_answers_the_running_and_the_remaining_calls(log, make_agent, gate, bus) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel([reply("", tool_call("gate", id="c1"), tool_call("gate", id="c2"))])
    recorder = BusRecorder(bus)
    agent = make_agent(model, tools=[Tool("gate", "Wait.", gate)])
    async with running(agent):
        handle = await agent.continue_("go")
        await gate.entered.wait()
        assert agent.abort("user said stop")
        outcome = await handle
        assert not agent.busy
    assert (outcome.status, outcome.reason, outcome.steps) == ("aborted", "user said stop", 1)
    assert gate.cancelled
    results = tool_results(log)
    assert set(results) == set(calls(log)) == {"c1", "c2"}
    assert all(is_error and "aborted: the turn ended (user said stop)" in text for text, is_error in results.values())
    end = list(log.iter_forward())[-1]
    assert end.data == {"name": "turn.aborted", "reason": "user said stop", "steps": 1}
    assert recorder.named("turn.aborted")[0]["outcome"] is outcome
    appended = [e["entry"].id for e in recorder.named("message.appended")]
    assert appended == [e.id for e in log.iter_forward() if e.type == "message"]  # each announced once


@pytest.mark.anyio
async def test_abort_during_the_model_call_writes_no_assistant_message(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    called = anyio.Event()

    async def hang(request: ModelRequest) -> ModelResult:
        called.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    agent = make_agent(FunctionModel(hang))
    async with running(agent):
        handle = await agent.continue_("go")
        await called.wait()
        assert agent.interrupt()
        outcome = await handle
        assert not agent.abort("nothing runs now")
    assert (outcome.status, outcome.reason, outcome.steps) == ("aborted", "interrupted", 1)
    assert [e.data.get("role") or e.name for e in log.iter_forward()] == ["turn.start", "user", "turn.aborted"]


@pytest.mark.anyio
async def test_after_an_abort_the_next_queued_turn_runs(make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel([reply("", tool_call("gate")), "second turn"])
    agent = make_agent(model, tools=[Tool("gate", "", gate)])
    async with running(agent):
        first = await agent.continue_("a")
        second = await agent.continue_("b")
        await gate.entered.wait()
        agent.abort("enough")
        assert (await first).status == "aborted"
        assert (await second).result.text == "second turn"  # type: ignore[union-attr]
    request = model.requests[1]
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool", "user"]
    assert request.messages[3].is_error


@pytest.mark.anyio
async def test_stop_aborts_the_turn_and_drops_the_queue(log, make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    agent = make_agent(ScriptedModel([reply("", tool_call("gate"))]), tools=[Tool("gate", "", gate)])
    async with anyio.create_task_group() as tg:
        await tg.start(agent.run)
        running_turn = await agent.continue_("a")
        queued = await agent.continue_("b")
        await gate.entered.wait()
        await agent.stop("host exit")
        await agent.stop()  # idempotent
    assert (await running_turn).reason == "host exit"
    dropped = await queued
    assert (dropped.status, dropped.reason, dropped.steps) == ("dropped", "host exit", 0)
    assert agent.state == "stopped"
    assert [e.turn for e in log.iter_forward() if e.name == "turn.start"] == [1]


@pytest.mark.anyio
async def test_cancelling_the_owner_still_closes_the_turn(log, make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    agent = make_agent(ScriptedModel([reply("", tool_call("gate", id="c1"))]), tools=[Tool("gate", "", gate)])
    async with anyio.create_task_group() as tg:
        await tg.start(agent.run)
        handle = await agent.continue_("a")
        await gate.entered.wait()
        tg.cancel_scope.cancel()
    outcome = await handle
    assert (outcome.status, outcome.reason) == ("aborted", "shutdown")
    assert tool_results(log)["c1"][1] is True
    assert list(log.iter_forward())[-1].name == "turn.aborted"
    assert log.durable_id == log.last_id


@pytest.mark.anyio
async def test_stopping_an_agent_that_never_ran(make_agent) -> None:  # type: ignore[no-untyped-def]
    agent = make_agent(ScriptedModel([]))
    await agent.stop()
    assert agent.state == "stopped"
