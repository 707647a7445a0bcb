"""When entries are announced and durable; a turn acts only on durable input; the fsyncs a turn costs."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import anyio
import pytest

from ishiki_host.core.agent import Agent
from ishiki_host.core.bus import BusEvent, EventBus
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.factlog import FactLog, FsyncPolicy
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.core.tools import Tool
from ishiki_host.core.turns import Turn, TurnSetup
from ishiki_host.testing.agent import running
from ishiki_host.testing.models import FunctionModel, ScriptedModel, reply, tool_call


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
async def test_each_entry_is_announced_once_a_turns_only_when_durable(tmp_path, gate, policy, expected_syncs) -> None:  # type: ignore[no-untyped-def]
    messages, syncs, announced = await run_one_exchange(tmp_path / "facts.jsonl", policy, gate)
    assert [entry_id for entry_id, _ in announced] == messages
    if policy != "never":
        (sent, sent_durable), *rest = announced
        assert sent_durable < sent  # the idle send: announced once written, its fsync under way
        assert all(durable >= entry_id for entry_id, durable in rest)
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


class HeldSyncer:
    """Holds the first fsync until the test releases it (the disk is slow); the others go through."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, fd: int) -> None:
        self.calls += 1
        if self.calls == 1 and not self.release.wait(10):
            raise OSError(errno.EIO, "the test never released the first fsync")
        os.fsync(fd)


@pytest.mark.anyio
async def test_a_turn_calls_its_model_during_the_inbound_fsync_and_acts_only_once_it_is_durable(tmp_path) -> None:  # type: ignore[no-untyped-def]
    syncer = HeldSyncer()
    log = await FactLog.open(tmp_path / "facts.jsonl", fsync="turn", clock=FakeClock(), syncer=syncer)
    asked = anyio.Event()
    acted: list[int] = []

    async def answer(request: ModelRequest) -> ModelResult:
        if len(model.requests) > 1:
            return reply("done")
        asked.set()
        return reply("", tool_call("act"))

    async def act(arguments: object, context: object) -> str:
        acted.append(log.durable_id)
        return "acted"

    model = FunctionModel(answer)
    agent = Agent(log, model, lambda turn: TurnSetup(tools=[Tool("act", "", act)]), clock=FakeClock())
    sent: list[int] = []
    async with running(agent), anyio.create_task_group() as tg:

        async def send() -> None:
            delivery = await agent.send(Message.user("hi"), trigger=True)
            sent.append((await delivery).id)

        tg.start_soon(send)
        with anyio.fail_after(10):
            await asked.wait()  # the model was asked while the message's fsync is held
        await anyio.wait_all_tasks_blocked()
        while_held = (list(acted), list(sent), log.durable_id)
        syncer.release.set()
        with anyio.fail_after(10):
            await agent.wait_idle()
    await log.close()
    assert while_held == ([], [], 0)  # nothing acted on the answer, nor returned, before the fsync
    assert sent == [1]
    assert len(acted) == 1
    assert acted[0] >= 1  # the tool ran once the message was durable
