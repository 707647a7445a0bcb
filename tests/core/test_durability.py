"""message.appended comes after durability; the number of fsyncs a turn costs under each policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from ishiki_host.core.agent import Agent
from ishiki_host.core.bus import BusEvent, EventBus
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.factlog import FactLog, FsyncPolicy
from ishiki_host.core.messages import Message
from ishiki_host.core.tools import Tool
from ishiki_host.core.turns import Turn, TurnSetup
from ishiki_host.testing.agent import running
from ishiki_host.testing.models import ScriptedModel, reply, tool_call


async def run_one_exchange(
    path: Path, policy: FsyncPolicy, gate: object
) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """A send, then a turn of two steps (one tool call) during which a message joins."""
    syncs: list[int] = []
    announced: list[tuple[int, int]] = []
    log = await FactLog.open(path, fsync=policy, clock=FakeClock(), syncer=syncs.append)
    bus = EventBus()
    bus.subscribe("message.appended", lambda event: announced.append((event["entry"].id, log.durable_id)))

    def setup(turn: Turn) -> TurnSetup:
        return TurnSetup(tools=[Tool("gate", "", gate)])  # type: ignore[arg-type]

    agent = Agent(log, ScriptedModel([reply("", tool_call("gate")), "done"]), setup, bus=bus)
    async with running(agent):
        await agent.send(Message.user("hi"), trigger=True)
        await gate.entered.wait()  # type: ignore[attr-defined]
        await agent.send(Message.user("joined"))
        gate.opened.set()  # type: ignore[attr-defined]
        await agent.wait_idle()
    messages = [e.id for e in log.iter_forward() if e.type == "message"]
    await log.close()
    return messages, syncs, announced


@pytest.mark.anyio
@pytest.mark.parametrize(("policy", "expected_syncs"), [("always", 7), ("turn", 4), ("never", 0)])
async def test_each_entry_is_announced_once_and_only_when_durable(tmp_path, gate, policy, expected_syncs) -> None:  # type: ignore[no-untyped-def]
    messages, syncs, announced = await run_one_exchange(tmp_path / "facts.jsonl", policy, gate)
    assert [entry_id for entry_id, _ in announced] == messages
    if policy != "never":
        assert all(durable >= entry_id for entry_id, durable in announced)
    # turn: the send; step 1's batch (before the joined entry goes in); the joined entry; step 2 with the end
    # always: every one of the 7 appends (user, turn.start, assistant, tool, joined, assistant, turn.done)
    assert len(syncs) == expected_syncs


@pytest.mark.anyio
async def test_a_joined_delivery_resolves_only_once_durable(log, make_agent, gate) -> None:  # type: ignore[no-untyped-def]
    checked: list[bool] = []
    agent = make_agent(ScriptedModel([reply("", tool_call("gate")), "done"]), tools=[Tool("gate", "", gate)])

    def check(event: BusEvent) -> None:
        checked.append(log.durable_id >= event["entry"].id)

    agent.bus.subscribe("message.appended", check)
    async with running(agent):
        handle = await agent.continue_("go")
        await gate.entered.wait()
        delivery = await agent.send(Message.user("joined"))
        gate.opened.set()
        entry = await delivery
        assert log.durable_id >= entry.id
        await handle
    assert checked
    assert all(checked)
