"""Media: an inbound image captured lazily and downloaded through get_image on first read; the onebot:// scheme
reading images, forwarded messages and messages through the running account, cached, and refused when no such
account runs."""

from __future__ import annotations

import pytest
from ishiki_host import ResourceCenter
from ishiki_host.errors import ResourceError

from ishiki_channel_onebot.bots import ONEBOT_BOTS, OneBotBots
from ishiki_channel_onebot.scheme import SCHEME, OneBotResources
from ishiki_channel_onebot.testing import at, image, running, text

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


async def test_an_inbound_image_is_fetched_through_get_image_on_first_read(onebot, onebot_host, onebot_connection):
    onebot.add_file("cat.png", PNG)
    connection = onebot_connection()
    async with running(connection):
        await connection.linked()
        await onebot.push_private(20001, [text("look"), image("cat.png")])
        (event,) = await onebot_host.wait_for_events(1)
        assert onebot.count("get_image") == 0  # nothing fetched before it is read
        blob = await onebot_host.read_asset(event.attachments[0].url)
    assert blob.data == PNG
    assert onebot.count("get_image") == 1


def center_for(onebot_host, tmp_path) -> ResourceCenter:
    center = ResourceCenter()
    bots = onebot_host.shared.setdefault(ONEBOT_BOTS, OneBotBots)
    center.register(SCHEME, OneBotResources(bots, tmp_path / "cache"), trust="trusted")
    return center


async def test_the_scheme_reads_images_forwards_and_messages_and_caches_them(
    onebot, onebot_host, onebot_connection, tmp_path
):
    onebot.add_file("dog.png", PNG)
    onebot.add_forward("fw1", [(20001, "Alice", "first"), (20002, "Bob", [text("see "), at(20001)])])
    center = center_for(onebot_host, tmp_path)
    connection = onebot_connection()
    async with running(connection):
        await connection.linked()
        frame = await onebot.push_group(300, 20001, "a message to find", card="Ali")
        await onebot_host.wait_for_events(1)
        picture = await center.read_bytes(f"onebot://{onebot.self_id}/image/dog.png")
        again = await center.read_bytes(f"onebot://{onebot.self_id}/image/dog.png")
        forward = await center.read(f"onebot://{onebot.self_id}/forward/fw1")
        message = await center.read(f"onebot://{onebot.self_id}/message/{frame['message_id']}")
        with pytest.raises(ResourceError) as missing:
            await center.read(f"onebot://{onebot.self_id}/forward/nope")
    assert picture.data == again.data == PNG
    assert picture.media_type == "image/png"
    assert onebot.count("get_image") == 1  # the second read came from the cache
    assert forward.text == "Alice (20001): first\nBob (20002): see @20001"
    assert message.text == "Ali (20001): a message to find"
    assert missing.value.code == "fetch_failed"
    assert "retcode 1404" in str(missing.value)


async def test_the_scheme_refuses_an_account_that_does_not_run_and_a_malformed_path(onebot_host, tmp_path):
    center = center_for(onebot_host, tmp_path)
    with pytest.raises(ResourceError) as absent:
        await center.read("onebot://4242/image/x.png")
    with pytest.raises(ResourceError) as malformed:
        await center.read("onebot://4242/video/x")
    assert absent.value.code == "unavailable"
    assert "does not run in this host" in str(absent.value)
    assert malformed.value.code == "not_found"
