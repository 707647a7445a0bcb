"""What a person's turn is doing reaches the connection it answers (``show_activity``): thinking with the
profile's model, the tool running, thinking again with the model that answered, done. Turns nobody waits for
(a heartbeat's) show nothing, and a connection whose ``show_activity`` raises does not hurt the turn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from ishiki_host.addresses.ids import Target
from ishiki_host.channels.base import TurnActivity
from ishiki_host.core.bus import EventBus
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.turns import Turn
from ishiki_host.runtime.activity import TurnActivities
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.channels import FakeChannel, FakeConnection
from ishiki_host.testing.host import MakeHost

pytestmark = pytest.mark.anyio


def moves(activities: list[tuple[str, TurnActivity]]) -> list[tuple[str, str | None, int]]:
    return [(a.state, a.tool, a.step) for _, a in activities]


async def test_a_turn_shows_thinking_the_tool_and_done(make_host: MakeHost, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.push(
        Reply(tool_calls=(ScriptedCall("read", {"url": "artifact://nothing"}),)),
        Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["hi"]}),)),
    )
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        channel = th.channel()
        with anyio.fail_after(10):
            delivery = await channel.say("hello")
            await delivery.settled()
        shown = list(channel.activities)
    assert moves(shown) == [
        ("thinking", None, 1),
        ("tool", "read", 1),
        ("thinking", None, 1),
        ("thinking", None, 2),
        ("tool", "send_message", 2),
        ("thinking", None, 2),
        ("thinking", None, 3),
        ("done", None, 3),
    ]
    assert {channel_id for channel_id, _ in shown} == {"private:1"}
    assert len({a.started_at for _, a in shown}) == 1  # the turn's start, for the elapsed time
    assert shown[0][1].model == "default"  # the profile's model before anyone answered
    assert shown[3][1].model == "fake:fake-model"  # who answered step 1


class Broken(FakeChannel):
    """A fake channel whose ``show_activity`` always raises."""

    def create(self, ctx: Any, account: Mapping[str, Any]) -> FakeConnection:
        class Connection(FakeConnection):
            def show_activity(self, channel_id: str, activity: TurnActivity) -> None:
                raise RuntimeError("the screen is gone")

        return Connection(ctx)


async def test_a_failing_show_activity_does_not_hurt_the_turn(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.push(Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["still here"]}),)))
    async with make_host(profiles={"ana": profile_yaml()}, plugins={"ishiki.channel.fake": Broken}) as th:
        with anyio.fail_after(10):
            delivery = await th.channel().say("hello")
            await delivery.settled()
        assert th.channel().texts() == ["still here"]
    assert any("showing the turn's activity" in r.getMessage() for r in caplog.records)


class Outlets:
    """The host's connections, as a runtime sees them: one fake connection."""

    def __init__(self, connection: FakeConnection):
        self.connection_of = connection

    def connection(self, sid: str) -> FakeConnection | None:
        return self.connection_of if sid == "fake:bot" else None

    def note_sent(self, sid: str, channel_id: str, ids: object) -> None:
        """Nothing to note."""


@pytest.mark.parametrize("priority", ["background", "interactive"])
async def test_only_a_turn_a_person_waits_for_is_shown(priority: str) -> None:
    connection, bus = FakeConnection(), EventBus()
    TurnActivities(Outlets(connection), FakeClock(), "default", lambda: Target("fake:bot", "private:1")).subscribe(bus)
    await bus.emit("turn.start", turn=Turn(1, priority))  # type: ignore[arg-type]
    await bus.emit("turn.done", outcome=None)
    shown = [a.state for _, a in connection.activities]
    assert shown == ([] if priority == "background" else ["thinking", "done"])
