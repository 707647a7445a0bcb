"""Messages through a running connection: dispatched once, acknowledged (seen, read) only after the host made them
durable, repeats and echoes dropped, failures retried or set aside, media fetched lazily."""

from __future__ import annotations

import json

import anyio
import pytest
from ishiki_host.errors import ChannelUnavailable, EventRejected, ResourceError
from neonize.proto import Neonize_pb2 as neo
from neonize.proto.waE2E import WAWebProtobufsE2E_pb2 as e2e

from ishiki_channel_whatsapp.web.errors import WhatsAppWebError
from ishiki_channel_whatsapp.web.testing import FakeWebClient, connected, document, image, text
from ishiki_channel_whatsapp.web.wire import Identity

pytestmark = pytest.mark.anyio

ALICE = "491700000001@s.whatsapp.net"
SELF_CHAT = "491511234567@s.whatsapp.net"
ME = Identity("491511234567", lid="987654321012345", name="Ishiki")


async def test_a_message_is_dispatched_then_read(running_web, device, channel_host, incoming):
    reads_at_dispatch = []
    channel_host.on_dispatch = lambda event: reads_at_dispatch.append(len(device.read))
    async with running_web() as connection:
        device.emit(incoming(text("hello"), message_id="3A01", push_name="Alice"))
        (event,) = await channel_host.wait_for_events(1)
        await device.until(lambda: device.read == [(ALICE, ALICE, ("3A01",))])
        assert reads_at_dispatch == [0]  # no read receipt before the host had it
        assert (event.sid, event.channel_id, event.user.name, event.content) == (
            "whatsapp:491511234567",
            "private:491700000001",
            "Alice",
            "hello",
        )
        assert connection.status()["taken"] == 1


async def test_read_receipts_can_be_off(running_web, device, channel_host, incoming):
    async with running_web(mark_read=False):
        device.emit(incoming(message_id="3A01"), incoming(message_id="3A02"))
        await channel_host.wait_for_events(2)
        assert device.read == []


async def test_a_repeat_is_not_dispatched_again(running_web, device, channel_host, incoming):
    async with running_web():
        device.emit(incoming(message_id="3A01"), incoming(message_id="3A01"), incoming(text("next"), message_id="3A02"))
        events = await channel_host.wait_for_events(2)
        assert [event.message_id for event in events] == ["3A01", "3A02"]
        assert channel_host.dispatches == 2


async def test_a_repeat_after_a_restart_is_not_dispatched_again(web_connection, running_web, channel_host, incoming):
    for ids in (["3A01"], ["3A01", "3A02"]):  # two processes, one after the other, on the same state directory
        device = FakeWebClient(me=ME)
        async with running_web(web_connection(client=device)):
            device.emit(*(incoming(message_id=message_id) for message_id in ids))
            await device.until(lambda d=device: len(d.read) == 1)  # acknowledged: taken, remembered, read
    assert [event.message_id for event in channel_host.events] == ["3A01", "3A02"]
    assert channel_host.dispatches == 2
    seen = (channel_host.state_dir / "whatsapp-seen.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in seen] == [f"{ALICE}/3A01", f"{ALICE}/3A02"]


async def test_a_stop_between_durable_and_acknowledged_leaves_it_to_the_host(
    web_connection, running_web, channel_host, incoming
):
    channel_host.dedupe = True  # the host's own repeat detection, by identity
    device = FakeWebClient(me=ME)
    async with anyio.create_task_group() as tg:
        channel_host.on_recorded = lambda event: tg.cancel_scope.cancel()  # the process dies right after durable
        await tg.start(web_connection(client=device).run)
        device.emit(incoming(message_id="3A01"))
    channel_host.on_recorded = None
    assert device.read == []
    device = FakeWebClient(me=ME)
    async with running_web(web_connection(client=device)):
        device.emit(incoming(message_id="3A01"))  # whatsmeow delivers it again
        await device.until(lambda: len(device.read) == 1)
    assert [event.message_id for event in channel_host.events] == ["3A01"]
    assert [event.message_id for event in channel_host.duplicates] == ["3A01"]


async def test_the_devices_own_echo_is_dropped_by_id(running_web, device, channel_host, incoming):
    async with running_web() as connection:
        result = await connection.send("private:491511234567", "note to self")
        (sent_id,) = result.ids
        device.emit(
            incoming(text("note to self"), chat=SELF_CHAT, message_id=sent_id, from_me=True),
            incoming(text("remind me"), chat=SELF_CHAT, message_id="3A09", from_me=True),
        )
        (event,) = await channel_host.wait_for_events(1)
        assert (event.message_id, event.channel_id, event.content) == ("3A09", "private:491511234567", "remind me")
        assert device.read == []  # the owner's own messages need no receipt


async def test_a_failed_dispatch_is_retried_with_back_off(running_web, device, channel_host, incoming, wake_sleeper):
    channel_host.fail_next(RuntimeError("disk hiccup"))
    async with running_web():
        device.emit(incoming(message_id="3A01"))
        delay = await wake_sleeper()
        assert 0.5 <= delay <= 1.0
        (event,) = await channel_host.wait_for_events(1)
        assert event.message_id == "3A01"
        await device.until(lambda: len(device.read) == 1)
        assert channel_host.dispatches == 2


async def test_a_passing_failure_is_not_counted(running_web, device, channel_host, incoming, wake_sleeper):
    channel_host.fail_next(*(ChannelUnavailable("stopping") for _ in range(4)))
    async with running_web(account={"backend": "web", "dispatch_tries": 1, "web": {"phone": "+491511234567"}}):
        device.emit(incoming(message_id="3A01"))
        for _ in range(4):
            await wake_sleeper()
        (event,) = await channel_host.wait_for_events(1)
        assert event.message_id == "3A01"


async def test_rejected_and_hopeless_messages_are_set_aside(running_web, device, channel_host, incoming, wake_sleeper):
    channel_host.fail_next(EventRejected("no such chat"), RuntimeError("1"), RuntimeError("2"))
    async with running_web(account={"backend": "web", "dispatch_tries": 2, "web": {"phone": "+491511234567"}}) as c:
        device.emit(incoming(message_id="3A01"), incoming(message_id="3A02"), incoming(text("ok"), message_id="3A03"))
        await wake_sleeper()  # 3A02's first failure
        (event,) = await channel_host.wait_for_events(1)
        assert event.message_id == "3A03"
        status = c.status()
        assert status["setAside"] == 2
        assert status["lastSetAside"]["updateId"] == "3A02"
        assert "2 tries failed" in status["lastSetAside"]["why"]
        await device.until(lambda: len(device.read) == 3)  # set aside is handled too: nobody will send it again
    kept = [json.loads(line) for line in (channel_host.state_dir / "whatsapp-set-aside.jsonl").read_text().splitlines()]
    assert [line["messageId"] for line in kept] == ["3A01", "3A02"]
    assert "the host rejected it" in kept[0]["why"]
    assert 'ID: "3A01"' in kept[0]["input"]  # the event in protobuf text form


async def test_a_malformed_message_is_set_aside_and_later_ones_flow(running_web, device, channel_host, incoming):
    async with running_web() as connection:
        device.emit(neo.Message(Message=text("who sent me?")), incoming(message_id="3A02"))
        (event,) = await channel_host.wait_for_events(1)
        assert event.message_id == "3A02"
        assert "malformed message" in connection.status()["lastSetAside"]["why"]


async def test_an_unknown_kind_is_recorded_as_such(running_web, device, channel_host, incoming):
    async with running_web():
        device.emit(incoming(e2e.Message(eventMessage=e2e.EventMessage(name="Party")), message_id="3A01"))
        (event,) = await channel_host.wait_for_events(1)
        assert event.extra["unsupported"] == "eventMessage"


async def test_messages_before_connected_wait_for_it(web_connection, channel_host, incoming):
    device = FakeWebClient(me=ME, connect_on_run=False)
    device.queue(incoming(message_id="3A01"), connected())
    connection = web_connection(client=device)
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(5):
            await tg.start(connection.run)
        (event,) = await channel_host.wait_for_events(1)
        assert event.sid == "whatsapp:491511234567"
        tg.cancel_scope.cancel()


async def test_the_address_book_names_who_has_no_push_name(running_web, device, channel_host, incoming):
    device.contacts[ALICE] = "Alice Liddell"
    async with running_web():
        device.emit(incoming(push_name="", message_id="3A01"))
        (event,) = await channel_host.wait_for_events(1)
        assert event.user.name == "Alice Liddell"


async def test_media_is_fetched_on_first_read(running_web, device, channel_host, incoming):
    device.files["/v/t62.7118-24/image"] = b"\xff\xd8jpeg bytes"
    async with running_web():
        device.emit(incoming(image(caption="look", size=12), message_id="3A01"))
        (event,) = await channel_host.wait_for_events(1)
        (attachment,) = event.attachments
        assert attachment.url.startswith("asset://")
        blob = await channel_host.read_asset(attachment.url)
        assert blob.data == b"\xff\xd8jpeg bytes"


async def test_a_failed_download_fails_the_read_not_the_message(running_web, device, channel_host, incoming):
    device.fail_downloads.append(WhatsAppWebError("WhatsApp download failed: 404", what="download", details="404"))
    async with running_web():
        device.emit(incoming(document(name="gone.pdf"), message_id="3A01"))
        (event,) = await channel_host.wait_for_events(1)
        (attachment,) = event.attachments
        with pytest.raises(ResourceError, match="fetch_failed: WhatsApp could not download the file: 404"):
            await channel_host.read_asset(attachment.url)


async def test_a_download_while_not_connected_says_so(running_web, device, channel_host, incoming):
    async with running_web() as connection:
        device.emit(incoming(document(), message_id="3A01"))
        (event,) = await channel_host.wait_for_events(1)
        device.end()  # the client ended: the connection waits to start its next life
        with anyio.fail_after(5):
            while connection.status()["state"] != "waiting":
                await anyio.lowlevel.checkpoint()
        with pytest.raises(ResourceError, match="unavailable: the WhatsApp linked device is not connected"):
            await channel_host.read_asset(event.attachments[0].url)
