"""Crash repair: a log that ends mid-turn gets its tool calls answered and its turn closed before work resumes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.core.agent import Agent
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.messages import Message
from ishiki_host.core.recovery import INTERRUPTED
from ishiki_host.core.turns import Turn, TurnSetup
from ishiki_host.testing.agent import running
from ishiki_host.testing.models import ScriptedModel

CHILDREN = Path(__file__).parent / "children"


def read_entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write(path: Path, entries: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for index, entry in enumerate(entries, start=1):
            out.write(json.dumps({"id": index, "ts": 1.0, **entry}) + "\n")


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "data": {**Message.user(text).to_dict(), **extra}}


def event(name: str, turn: int, **data: Any) -> dict[str, Any]:
    return {"type": "event", "turn": turn, "data": {"name": name, **data}}


def assistant_calling(turn: int, *ids: str) -> dict[str, Any]:
    calls = [{"id": call_id, "name": "act", "arguments": {}} for call_id in ids]
    return {"type": "message", "turn": turn, "data": {"role": "assistant", "parts": [], "tool_calls": calls}}


def result(turn: int, call_id: str, text: str = "done") -> dict[str, Any]:
    data = {"role": "tool", "parts": [{"type": "text", "text": text}], "tool_call_id": call_id, "tool_name": "act"}
    return {"type": "message", "turn": turn, "data": data}


def setup(turn: Turn) -> TurnSetup:
    return TurnSetup(system="sys")


async def start_agent(path: Path, model: ScriptedModel) -> tuple[FactLog, Agent]:
    log = await FactLog.open(path, clock=FakeClock())
    return log, Agent(log, model, setup)


@pytest.mark.anyio
async def test_a_log_that_ends_mid_step_is_repaired_before_the_first_turn(log_path: Path) -> None:
    write(
        log_path,
        [
            user("earlier"),
            event("turn.start", 1),
            event("turn.done", 1, reason="no_tool_calls"),
            user("do two things"),
            event("turn.start", 2),
            user("Continue.", wake=True),
            assistant_calling(2, "c1", "c2"),
            result(2, "c1"),
            user("are you there?"),  # cannot happen (joins wait for the batch); kept to show what counts
        ],
    )
    model = ScriptedModel(["back again"])
    log, agent = await start_agent(log_path, model)
    async with running(agent):
        recovered = agent.recovered
        assert recovered is not None
        assert recovered.aborted_turn == 2
        assert recovered.crashed
        assert recovered.last_turn == 2
        assert [e.data["parts"][0]["text"] for e in recovered.unanswered] == ["do two things", "are you there?"]
        repair_result, aborted = recovered.repaired
        assert (repair_result.id, repair_result.turn) == (10, 2)
        assert Message.from_dict(repair_result.data) == Message.tool(
            Message.from_dict(assistant_calling(2, "c2")["data"]).tool_calls[0], INTERRUPTED, is_error=True
        )
        assert (aborted.id, aborted.turn, aborted.data) == (11, 2, {"name": "turn.aborted", "reason": "crash"})
        handle = await agent.continue_()
        assert handle.number == 3
        await handle
    await log.close()
    roles = [m.role for m in model.requests[0].messages]
    assert roles == ["system", "user", "user", "user", "assistant", "tool", "user", "tool"]


@pytest.mark.anyio
async def test_a_clean_log_needs_no_repair(log_path: Path) -> None:
    write(log_path, [user("hi"), event("turn.start", 4), event("turn.done", 4, reason="finish"), user("later")])
    log, agent = await start_agent(log_path, ScriptedModel([]))
    async with running(agent):
        assert agent.recovered is not None
        assert (agent.recovered.aborted_turn, agent.recovered.repaired, agent.recovered.unanswered) == (None, (), ())
        assert agent.recovered.last_turn == 4
    assert log.last_id == 4
    await log.close()


@pytest.mark.anyio
async def test_a_turn_that_crashed_before_the_model_answered_is_closed(log_path: Path) -> None:
    write(log_path, [user("hi"), event("turn.start", 1)])
    log, agent = await start_agent(log_path, ScriptedModel([]))
    async with running(agent):
        assert agent.recovered is not None
        assert agent.recovered.aborted_turn == 1
        assert [e.data["name"] for e in agent.recovered.repaired] == ["turn.aborted"]
    await log.close()


@pytest.mark.anyio
async def test_messages_of_a_turn_that_crashed_twice_stay_unanswered(log_path: Path) -> None:
    write(
        log_path,
        [
            event("turn.start", 1),
            event("turn.done", 1, reason="finish"),
            user("question"),
            event("turn.start", 2),
            event("turn.aborted", 2, reason="crash"),  # the first repair
            event("turn.start", 3),  # the retry, which crashed too
        ],
    )
    log, agent = await start_agent(log_path, ScriptedModel([]))
    async with running(agent):
        assert agent.recovered is not None
        assert agent.recovered.aborted_turn == 3
        assert [Message.from_dict(e.data).text for e in agent.recovered.unanswered] == ["question"]
    await log.close()


@pytest.mark.anyio
async def test_an_agent_killed_mid_tool_is_repaired_on_the_next_start(log_path: Path) -> None:
    with anyio.fail_after(30):
        async with await anyio.open_process(
            [sys.executable, str(CHILDREN / "crash_mid_tool.py"), str(log_path)]
        ) as child:
            assert child.stdout is not None
            async for chunk in child.stdout:
                if b"in-tool" in chunk:
                    break
            child.kill()
            await child.wait()
    before = read_entries(log_path)
    assert before[-1]["data"]["tool_calls"][0]["id"] == "call_slow"  # write-ahead: the call is logged
    model = ScriptedModel(["sorry, I was interrupted"])
    log, agent = await start_agent(log_path, model)
    async with running(agent):
        recovered = agent.recovered
        assert recovered is not None
        assert recovered.aborted_turn == 2
        assert [Message.from_dict(e.data).text for e in recovered.unanswered] == ["second"]
        slow, later, aborted = recovered.repaired
        assert [slow.data["tool_call_id"], later.data["tool_call_id"]] == ["call_slow", "call_later"]
        assert aborted.data == {"name": "turn.aborted", "reason": "crash"}
        await (await agent.continue_())
    await log.close()
    request = model.requests[0]
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "user", "assistant", "tool", "tool"]
    assert request.messages[-1].text == INTERRUPTED


@pytest.mark.anyio
async def test_a_turn_aborted_by_stopping_is_reported_on_the_next_start(log_path: Path) -> None:
    gate_entered = anyio.Event()

    async def hang(request: Any) -> Any:
        gate_entered.set()
        await anyio.sleep_forever()

    from ishiki_host.testing.models import FunctionModel

    log = await FactLog.open(log_path, clock=FakeClock())
    async with running(Agent(log, FunctionModel(hang), setup)) as agent:
        await agent.send(Message.user("answer me"), trigger=True)
        await gate_entered.wait()
    assert list(log.iter_forward())[-1].data == {
        "name": "turn.aborted",
        "reason": "shutdown",
        "steps": 1,
        "resume": True,
    }
    await log.close()
    log, agent = await start_agent(log_path, ScriptedModel([]))
    async with running(agent):
        recovered = agent.recovered
        assert recovered is not None
        assert (recovered.aborted_turn, recovered.crashed, recovered.repaired) == (1, False, ())
        assert [Message.from_dict(e.data).text for e in recovered.unanswered] == ["answer me"]
    await log.close()


@pytest.mark.anyio
@pytest.mark.parametrize("end", ["crash", "stopped"])
async def test_a_message_that_came_as_the_last_turn_ended_is_unanswered_when_its_own_turn_breaks(
    log_path: Path, end: str
) -> None:
    entries = [
        user("good morning"),
        event("turn.start", 1, triggers=[{"by": "continue", "entry": 1}]),
        user("what is the weather?"),  # appended while turn 1 was ending: unseen by it, older than its end
        event("turn.done", 1, reason="sent"),
        event("turn.start", 2, triggers=[{"by": "continue", "entry": 3, "rule": "direct"}]),
    ]
    if end == "stopped":
        entries.append(event("turn.aborted", 2, reason="shutdown", resume=True))
    write(log_path, entries)
    log, agent = await start_agent(log_path, ScriptedModel([]))
    async with running(agent):
        assert agent.recovered is not None
        assert agent.recovered.aborted_turn == 2
        assert [Message.from_dict(e.data).text for e in agent.recovered.unanswered] == ["what is the weather?"]
    await log.close()
