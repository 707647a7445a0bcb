"""``/stop`` on a real host: it aborts the running turn at once (the fact log says who stopped it), answers
"Nothing to stop." when no turn runs, needs ``trusted``, and a command sent while a turn runs is answered
before the turn ends."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from ishiki_host.testing import FakeOpenAIServer, profile_yaml
from ishiki_host.testing.channels import FakeConnection
from ishiki_host.testing.host import MakeHost, TestHost

pytestmark = pytest.mark.anyio

OWNED = profile_yaml(extra='trust: {owners: ["fake:1"], allow_unlisted: true}\n')


async def start_a_hanging_turn(th: TestHost, fake_openai: FakeOpenAIServer) -> FakeConnection:
    """Say hello to a model that never answers; returns once the turn is thinking."""
    fake_openai.hang()
    channel = th.channel()
    with anyio.fail_after(10):
        await channel.say("hello")
        await channel.wait_activity("thinking")
    return channel


def turn_ends(root: Path) -> list[dict[str, object]]:
    (log,) = (root / "data" / "runtimes").rglob("facts.jsonl")
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [
        e["data"]
        for e in entries
        if e.get("data", {}).get("name", "").startswith("turn.") and e["data"]["name"] != "turn.start"
    ]


async def test_stop_aborts_the_running_turn_and_says_so(make_host: MakeHost, fake_openai: FakeOpenAIServer) -> None:
    async with make_host(profiles={"ana": OWNED}) as th:
        channel = await start_a_hanging_turn(th, fake_openai)
        with anyio.fail_after(10):
            await channel.say("/stop")
            assert channel.texts() == ["Stopped."]
            runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
            await runtime.settled()
        assert [a.state for _, a in channel.activities][-1] == "done"
    (end,) = turn_ends(th.root)
    assert end["name"] == "turn.aborted"
    assert end["reason"] == "stopped by fake:1 (/stop)"
    assert "resume" not in end  # stopped on purpose: not to be resumed at the next start


async def test_stop_with_no_turn_running_has_nothing_to_stop(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    async with make_host(profiles={"ana": OWNED}) as th:
        with anyio.fail_after(10):
            await th.channel().say("/stop")
        assert th.channel().texts() == ["Nothing to stop."]
    assert turn_ends(th.root) == []  # no turn ran, and none was aborted


async def test_a_command_during_a_turn_is_answered_before_the_turn_ends(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    async with make_host(profiles={"ana": OWNED}) as th:
        channel = await start_a_hanging_turn(th, fake_openai)
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        with anyio.fail_after(10):
            await channel.say("/whoami")
        assert runtime.context.agent.busy  # the turn still waits for its model
        (answer,) = channel.texts()
        assert "fake:1" in answer
        with anyio.fail_after(10):
            await channel.say("/stop")
            await runtime.settled()
        assert channel.texts()[-1] == "Stopped."


async def test_an_untrusted_sender_cannot_stop_a_turn(make_host: MakeHost, fake_openai: FakeOpenAIServer) -> None:
    async with make_host(profiles={"ana": OWNED}) as th:
        channel = await start_a_hanging_turn(th, fake_openai)
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        with anyio.fail_after(10):
            await channel.say("/stop", user_id="2")
        assert runtime.context.agent.busy
        (refused,) = channel.texts()
        assert refused.startswith("Sorry, /stop is only for ")
        with anyio.fail_after(10):
            await channel.say("/stop")  # the owner may
            await runtime.settled()
        assert channel.texts()[-1] == "Stopped."
