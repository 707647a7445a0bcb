"""A command on the linked device is answered at once, never queued behind a message still being dispatched (one
that joined a running turn is durable only when the turn's step ends); plain messages keep their order, and the
device's own events are handled meanwhile."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from ishiki_host.testing import FakeChannelHost, FakeDelivery

from ishiki_channel_whatsapp.web.ahead import AHEAD
from ishiki_channel_whatsapp.web.testing import disconnected, text

pytestmark = pytest.mark.anyio

ALICE = "491700000001@s.whatsapp.net"


class HoldingHost(FakeChannelHost):
    """A ``FakeChannelHost`` holding each dispatch of an event ``picks`` chooses, before anything is recorded,
    until ``release`` is set (as a running turn holds a message that joins it); ``held`` lists those waiting."""

    def __init__(self, *args: Any, picks: Any, **keys: Any):
        super().__init__(*args, **keys)
        self.picks = picks
        self.release = anyio.Event()
        self.held: list[Any] = []

    async def dispatch(self, event: Any, attachments: Sequence[Any] = ()) -> FakeDelivery:
        if not self.release.is_set() and self.picks(event):
            self.held.append(event)
            await self.release.wait()
        return await super().dispatch(event, attachments)


@pytest.fixture
def holding_host(tmp_path, fake_clock):
    """``holding_host(picks)``: a ``HoldingHost`` on the fake clock."""
    return lambda picks: HoldingHost(tmp_path / "channel-host", clock=fake_clock, picks=picks)


def _contents(host: FakeChannelHost) -> list[str]:
    return [event.content for event in host.events]


async def test_a_command_is_taken_while_a_message_waits_and_plain_ones_keep_their_order(
    web_connection, running_web, device, holding_host, incoming
):
    host = holding_host(lambda event: event.content == "one")
    async with running_web(web_connection(host=host)) as connection:
        device.emit(incoming(text("one"), message_id="3A01"))
        device.emit(incoming(text("two"), message_id="3A02"), incoming(text("/etc/hosts is gone"), message_id="3A03"))
        device.emit(incoming(text("/Status now"), message_id="3A04"), incoming(text("three"), message_id="3A05"))
        device.emit(incoming(text("one"), message_id="3A01"))  # whatsmeow delivers it again meanwhile
        await host.wait_for_events(1)
        device.emit(disconnected())  # the device's own events are not held back either
        await anyio.wait_all_tasks_blocked()
        assert _contents(host) == ["/Status now"]
        assert [event.content for event in host.held] == ["one"]
        assert device.read == [(ALICE, ALICE, ("3A04",))]  # read once taken: the others are not yet
        assert connection.status()["state"] == "reconnecting"
        host.release.set()
        await host.wait_for_events(5)
        await device.until(lambda: len(device.read) == 5)
    assert _contents(host) == ["/Status now", "one", "two", "/etc/hosts is gone", "three"]
    assert [ids for _, _, ids in device.read] == [("3A04",), ("3A01",), ("3A02",), ("3A03",), ("3A05",)]
    assert host.dispatches == 5  # the repeat was not taken again


async def test_at_most_a_few_commands_go_ahead_at_once(web_connection, running_web, device, holding_host, incoming):
    host = holding_host(lambda event: event.content.startswith("/"))
    async with running_web(web_connection(host=host)):
        device.emit(*(incoming(text("/status"), message_id=f"3A0{n}") for n in range(AHEAD + 1)))
        device.emit(incoming(text("hello"), message_id="3A99"))
        await anyio.wait_all_tasks_blocked()
        assert len(host.held) == AHEAD  # the next command waits for a place, and what came after it waits too
        assert host.events == []
        host.release.set()
        await host.wait_for_events(AHEAD + 2)
    assert sorted(_contents(host)) == sorted(["/status"] * (AHEAD + 1) + ["hello"])
