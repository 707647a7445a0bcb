"""``before_turn``: the owner's work before each turn, while none runs (the runtime compacts there)."""

from __future__ import annotations

import anyio
import pytest

from ishiki_host.core.messages import Message
from ishiki_host.testing.agent import running
from ishiki_host.testing.models import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_it_runs_before_each_turn_and_the_agent_counts_as_idle_meanwhile(make_agent, log) -> None:  # type: ignore[no-untyped-def]
    entered, release = anyio.Event(), anyio.Event()
    seen: list[tuple[int, int]] = []

    async def before() -> None:
        seen.append((agent.queued, sum(1 for e in log.iter_forward() if e.name == "turn.start")))
        entered.set()
        await release.wait()

    agent = make_agent(ScriptedModel(["one", "two"]), before_turn=before)
    async with running(agent):
        await agent.send(Message.user("hi"))
        first = await agent.continue_()
        await entered.wait()
        with anyio.fail_after(5):  # what a /compact waits for: no turn runs while the owner prepares
            await agent.wait_idle()
        assert not agent.busy
        release.set()
        assert (await first).status == "done"
        entered, release = anyio.Event(), anyio.Event()
        release.set()
        assert (await (await agent.continue_("again"))).status == "done"
    assert seen == [(1, 0), (1, 1)]  # the turn still queued, none started yet


async def test_a_failure_there_is_logged_and_the_turn_runs_anyway(make_agent, caplog) -> None:  # type: ignore[no-untyped-def]
    async def before() -> None:
        raise RuntimeError("the summary model is down")

    agent = make_agent(ScriptedModel(["answered"]), before_turn=before)
    async with running(agent):
        await agent.send(Message.user("hi"))
        outcome = await (await agent.continue_())
    assert outcome.status == "done"
    assert "the work before turn 1 failed; the turn runs anyway" in caplog.text


async def test_stop_cancels_it_and_drops_the_queued_turn(make_agent) -> None:  # type: ignore[no-untyped-def]
    entered = anyio.Event()
    cancelled: list[bool] = []

    async def before() -> None:
        entered.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise

    agent = make_agent(ScriptedModel(["never"]), before_turn=before)
    async with running(agent):
        await agent.send(Message.user("hi"))
        handle = await agent.continue_()
        await entered.wait()
        await agent.stop()
    outcome = await handle
    assert (outcome.status, cancelled) == ("dropped", [True])
