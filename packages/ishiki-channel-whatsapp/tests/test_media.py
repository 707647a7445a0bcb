"""Inbound media: captured lazily, downloaded on first read in Meta's two steps with the bearer token."""

from __future__ import annotations

import anyio
import pytest
from ishiki_host.errors import ResourceError

from ishiki_channel_whatsapp import WhatsAppAuthError
from ishiki_channel_whatsapp.testing import Fault, running

pytestmark = pytest.mark.anyio

ALICE = "4915112345678"
PHOTO = b"\xff\xd8\xff\xe0 a photo of tea"


async def test_an_image_is_captured_without_downloading_and_read_on_demand(
    running_connection, whatsapp_graph, whatsapp_host
):
    media_id = whatsapp_graph.add_media(PHOTO, "image/jpeg")
    async with running_connection() as (_connection, driver):
        answer, _ = await driver.media(ALICE, "image", media_id, caption="look")
        assert answer.status_code == 200
        (event,) = whatsapp_host.events
        assert whatsapp_graph.downloads == []  # nothing fetched while the webhook was answered
        (attachment,) = event.attachments
        assert attachment.url.startswith("asset://")
        blob = await whatsapp_host.read_asset(attachment.url)
    assert blob.data == PHOTO
    assert whatsapp_graph.downloads == [media_id]
    assert [c.name for c in whatsapp_graph.calls if c.name in ("media", "download")] == ["media", "download"]
    assert event.content == "look"


async def test_media_over_the_download_limit_is_refused_as_too_large(running_connection, whatsapp_graph, whatsapp_host):
    media_id = whatsapp_graph.add_media(b"x" * 2000, "video/mp4")
    async with running_connection(max_download_bytes=1000) as (_connection, driver):
        await driver.media(ALICE, "video", media_id, mime_type="video/mp4")
        (event,) = whatsapp_host.events
        with pytest.raises(ResourceError) as caught:
            await whatsapp_host.read_asset(event.attachments[0].url)
    assert caught.value.code == "too_large"
    assert whatsapp_graph.downloads == []


async def test_media_meta_no_longer_has_is_a_failed_fetch(running_connection, whatsapp_graph, whatsapp_host):
    async with running_connection() as (_connection, driver):
        await driver.media(ALICE, "document", "123456789", mime_type="application/pdf", filename="gone.pdf")
        (event,) = whatsapp_host.events
        with pytest.raises(ResourceError) as caught:
            await whatsapp_host.read_asset(event.attachments[0].url)
    assert caught.value.code == "fetch_failed"
    assert "does not exist" in str(caught.value)


async def test_a_download_refused_for_a_passing_reason_can_be_read_again(
    running_connection, whatsapp_graph, whatsapp_host
):
    media_id = whatsapp_graph.add_media(PHOTO)
    whatsapp_graph.fail("download", Fault.server_error())
    async with running_connection() as (_connection, driver):
        await driver.media(ALICE, "image", media_id)
        url = whatsapp_host.events[0].attachments[0].url
        with pytest.raises(ResourceError):
            await whatsapp_host.read_asset(url)
        assert (await whatsapp_host.read_asset(url)).data == PHOTO


async def test_a_token_refused_while_downloading_stops_the_channel(
    whatsapp_connection, whatsapp_driver, whatsapp_graph, whatsapp_host
):
    media_id = whatsapp_graph.add_media(PHOTO)
    connection = whatsapp_connection()

    async def read_with_an_expired_token():
        async with running(connection):
            await whatsapp_driver(connection).media(ALICE, "image", media_id)
            whatsapp_graph.expire_token()
            with pytest.raises(ResourceError):
                await whatsapp_host.read_asset(whatsapp_host.events[0].attachments[0].url)
            await anyio.sleep_forever()  # the connection ends by itself

    with pytest.raises(WhatsAppAuthError, match="now refuses the access token"):
        await read_with_an_expired_token()
