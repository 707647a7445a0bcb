"""``FakeChannelHost``: what a channel plugin's tests dispatch into, with real attachment capture."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.channels.base import ChannelHost, Delivery, InboundAttachment
from ishiki_host.channels.events import IshikiEvent, User
from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import ChannelError
from ishiki_host.testing import FakeChannelHost

pytestmark = pytest.mark.anyio


def event(message_id: str, text: str = "hi") -> IshikiEvent:
    return IshikiEvent(
        kind="message.created",
        platform="chat",
        self_id="bot",
        channel_id="private:1",
        message_id=message_id,
        timestamp=1.0,
        user=User("1"),
        content=text,
    )


async def test_it_is_a_channel_host_on_the_fake_clock(channel_host: FakeChannelHost, fake_clock: FakeClock) -> None:
    assert isinstance(channel_host, ChannelHost)
    assert channel_host.clock is fake_clock
    assert channel_host.state_dir.name == "state"
    delivery = await channel_host.dispatch(event("1"))
    assert isinstance(delivery, Delivery)
    await delivery.settled()


async def test_events_are_recorded_in_order_with_their_entry_ids(channel_host: FakeChannelHost) -> None:
    first = await channel_host.dispatch(event("1", "a"))
    second = await channel_host.dispatch(event("2", "b"))
    assert (first.routed, first.entry_id, second.entry_id) == (True, 1, 2)
    assert [e.content for e in channel_host.events] == ["a", "b"]


async def test_waiting_for_events_returns_once_they_arrive(channel_host: FakeChannelHost) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(channel_host.wait_for_events, 2)
        await channel_host.dispatch(event("1"))
        await channel_host.dispatch(event("2"))
    assert len(await channel_host.wait_for_events(2)) == 2
    with pytest.raises(TimeoutError):
        await channel_host.wait_for_events(3, deadline=0.05)


async def test_attachments_are_captured_eagerly_or_through_the_channels_fetcher(channel_host: FakeChannelHost) -> None:
    fetched: list[Mapping[str, Any]] = []

    async def fetch(locator: Mapping[str, Any]) -> bytes:
        fetched.append(locator)
        return b"lazy bytes"

    channel_host.fetchers.register("chat", fetch)
    attachments = [
        InboundAttachment("text/plain", name="a.txt", data=b"eager bytes"),
        InboundAttachment("image/png", name="b.png", size=10, fetcher="chat", locator={"file": "f1"}),
    ]
    await channel_host.dispatch(event("1"), attachments)
    (recorded,) = channel_host.events
    eager, lazy = recorded.attachments
    assert eager.url.startswith("asset://")
    assert lazy.url.startswith("asset://")
    assert (await channel_host.read_asset(eager.url)).data == b"eager bytes"
    assert fetched == []  # downloaded on first read only
    assert (await channel_host.read_asset(lazy.url)).data == b"lazy bytes"
    assert fetched == [{"file": "f1"}]


async def test_an_attachment_needs_data_or_a_fetcher(channel_host: FakeChannelHost) -> None:
    with pytest.raises(ValueError, match="needs data or a fetcher"):
        await channel_host.dispatch(event("1"), [InboundAttachment("text/plain")])
    assert channel_host.events == []


async def test_failed_dispatches_record_nothing(channel_host: FakeChannelHost) -> None:
    channel_host.fail_next(ChannelError("disk full"), OSError("again"))
    with pytest.raises(ChannelError, match="disk full"):
        await channel_host.dispatch(event("1"))
    with pytest.raises(OSError, match="again"):
        await channel_host.dispatch(event("1"))
    await channel_host.dispatch(event("1"))
    assert (channel_host.dispatches, len(channel_host.events)) == (3, 1)


async def test_unrouted_events_are_not_recorded(tmp_path: Path) -> None:
    host = FakeChannelHost(tmp_path, routed=False)
    delivery = await host.dispatch(event("1"))
    assert (delivery.routed, delivery.runtime_key, delivery.entry_id) == (False, None, None)
    assert host.events == []
    assert isinstance(host.clock, FakeClock)
