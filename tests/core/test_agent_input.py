"""send(): appended at once when idle; join, defer or reject while a turn runs; triggers; durability."""

from __future__ import annotations

from typing import Any

import pytest

from ishiki_host.core.factlog import FactLog
from ishiki_host.core.hooks import AgentHooks
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.core.tools import Tool
from ishiki_host.errors import AgentBusy, AgentStopped
from ishiki_host.testing.agent import BusRecorder, running
from ishiki_host.testing.models import FunctionModel, ScriptedModel, reply, tool_call


def kinds(log: FactLog) -> list[str]:
    """Each entry as ``role:text`` for messages, the event name otherwise."""
    out = []
    for entry in log.iter_forward():
        if entry.type == "message":
            message = Message.from_dict(entry.data)
            out.append(f"{message.role}:{message.text}" if message.text else message.role)
        else:
            out.append(str(entry.name or entry.type))
    return out


@pytest.mark.anyio
async def test_an_idle_send_is_announced_once_written_and_durable_when_it_returns(log, make_agent, bus, syncer) -> None:  # type: ignore[no-untyped-def]
    # Announced before its fsync (the decision it prompts overlaps the fsync); durable when send returns.
    seen: list[tuple[int, bool, int]] = []
    bus.subscribe("message.appended", lambda e: seen.append((e["entry"].id, e["joined"], log.durable_id)))
    agent = make_agent(ScriptedModel([]))
    async with running(agent):
        delivery = await agent.send({"role": "user", "parts": [{"type": "text", "text": "hi"}], "source": {"id": 7}})
        assert delivery.done
        assert delivery.entry is not None
        assert seen == [(1, False, 0)]
        assert log.durable_id == 1
        assert await delivery == delivery.entry
        assert delivery.entry.data["source"] == {"id": 7}
        assert not agent.busy
        assert agent.queued == 0
    assert syncer.calls >= 1


@pytest.mark.anyio
async def test_a_joined_message_waits_for_the_batch_and_is_seen_at_the_next_step(log, make_agent, gate, bus) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel([reply("", tool_call("gate"), tool_call("gate")), "saw it"])
    recorder = BusRecorder(bus)
    agent = make_agent(model, tools=[Tool("gate", "Wait.", gate)])
    async with running(agent):
        handle = await agent.continue_("start")
        await gate.entered.wait()
        delivery = await agent.send(Message.user("late news"), trigger=True)
        assert not delivery.done
        assert "user:late news" not in kinds(log)
        gate.opened.set()
        entry = await delivery
        outcome = await handle
        await agent.wait_idle()
    assert kinds(log) == [
        "turn.start",
        "user:start",
        "assistant",
        "tool:opened",
        "tool:opened",
        "user:late news",
        "assistant:saw it",
        "turn.done",
    ]
    assert model.requests[1].messages[-1].text == "late news"
    assert outcome.unseen == ()  # the turn saw it, so its trigger needs no second turn (kinds shows one)
    joined = [e for e in recorder.named("message.appended") if e["joined"]]
    assert [e["entry"] for e in joined] == [entry]


@pytest.mark.anyio
async def test_a_message_joined_in_the_last_step_is_reported_unseen_and_can_trigger(log, make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    def answer(request: ModelRequest) -> ModelResult:
        if request.messages[-1].text == "start":
            return reply("", tool_call("gate"))
        return reply(f"re: {request.messages[-1].text or request.messages[-1].role}")

    model = FunctionModel(answer)

    class Hooks(AgentHooks):
        async def on_step_finish(self, step: Any) -> Any:
            return "stop" if step.index == 1 else None

    agent = make_agent(model, tools=[Tool("gate", "Wait.", gate)], hooks=[Hooks()])
    async with running(agent):
        first = await agent.continue_("start")
        await gate.entered.wait()
        quiet = await agent.send(Message.user("aside"))
        loud = await agent.send(Message.user("please answer"), trigger=True)
        gate.opened.set()
        outcome = await first
        await agent.wait_idle()
    assert outcome.reason == "stop_hook"
    assert outcome.unseen == (quiet.entry, loud.entry)
    second_start = [e for e in log.iter_forward() if e.name == "turn.start"][1]
    assert second_start.data["triggers"] == [{"by": "message", "entry": loud.entry.id}]  # type: ignore[union-attr]
    assert model.requests[-1].messages[-1].text == "please answer"


@pytest.mark.anyio
async def test_a_deferred_message_waits_for_the_turn_to_end(log, make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel([reply("", tool_call("gate")), "done", "answered the deferred one"])
    agent = make_agent(model, tools=[Tool("gate", "Wait.", gate)])
    async with running(agent):
        handle = await agent.continue_("start")
        await gate.entered.wait()
        delivery = await agent.send(Message.user("after you"), if_busy="defer", trigger=True)
        gate.opened.set()
        outcome = await handle
        entry = await delivery
        await agent.wait_idle()
    assert outcome.unseen == ()
    assert kinds(log)[:7] == [
        "turn.start",
        "user:start",
        "assistant",
        "tool:opened",
        "assistant:done",
        "turn.done",
        "user:after you",
    ]
    assert kinds(log)[7:] == ["turn.start", "assistant:answered the deferred one", "turn.done"]
    assert [e for e in log.iter_forward() if e.name == "turn.start"][1].data["triggers"] == [
        {"by": "message", "entry": entry.id}
    ]


@pytest.mark.anyio
async def test_reject_refuses_while_busy(make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    agent = make_agent(ScriptedModel([reply("", tool_call("gate")), "done"]), tools=[Tool("gate", "", gate)])
    async with running(agent):
        delivery = await agent.send(Message.user("idle is fine"), if_busy="reject")
        assert delivery.done
        handle = await agent.continue_("go")
        await gate.entered.wait()
        with pytest.raises(AgentBusy, match="running turn 1"):
            await agent.send(Message.user("not now"), if_busy="reject")
        gate.opened.set()
        await handle


@pytest.mark.anyio
async def test_triggering_sends_while_idle_start_one_turn(log, make_agent) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel(["answer"])
    agent = make_agent(model)
    async with running(agent):
        await agent.send(Message.user("one"), trigger=True)
        await agent.wait_idle()
    assert kinds(log) == ["user:one", "turn.start", "assistant:answer", "turn.done"]


@pytest.mark.anyio
async def test_bad_sends_and_sends_to_a_stopped_agent_raise(make_agent) -> None:  # type: ignore[no-untyped-def]
    agent = make_agent(ScriptedModel([]))
    with pytest.raises(AgentStopped, match=r"tg\.start"):
        await agent.send(Message.user("too early"))
    with pytest.raises(ValueError, match="role"):
        await agent.send({"parts": []})
    with pytest.raises(ValueError, match="if_busy"):
        await agent.send(Message.user("x"), if_busy="maybe")  # type: ignore[arg-type]
    async with running(agent):
        pass
    with pytest.raises(AgentStopped, match="stopped"):
        await agent.send(Message.user("too late"))
    with pytest.raises(AgentStopped):
        await agent.continue_()


@pytest.mark.anyio
async def test_entries_held_when_the_agent_stops_are_still_written(log, make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    agent = make_agent(ScriptedModel([reply("", tool_call("gate"))]), tools=[Tool("gate", "", gate)])
    async with running(agent):
        await agent.continue_("go")
        await gate.entered.wait()
        joined = await agent.send(Message.user("joined"))
        deferred = await agent.send(Message.user("deferred"), if_busy="defer")
    assert (await joined).id < (await deferred).id
    assert kinds(log)[-3:] == ["user:joined", "turn.aborted", "user:deferred"]
