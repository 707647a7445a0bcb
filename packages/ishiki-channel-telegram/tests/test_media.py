"""Inbound media: captured lazily as assets, downloaded once on first read, refused over the limits."""

from __future__ import annotations

import pytest
from ishiki_host.errors import ResourceError

from ishiki_channel_telegram.testing import private_chat, running, user

pytestmark = pytest.mark.anyio

ALICE = user(42, "Alice")
JPEG = b"\xff\xd8\xff\xe0" + b"jpeg bytes " * 100


async def test_photo_is_captured_lazily_and_fetched_once(telegram_server, telegram_host, telegram_connection):
    small = telegram_server.add_file(b"\xff\xd8\xff small")
    large = telegram_server.add_file(JPEG)
    async with running(telegram_connection()):
        telegram_server.push_message(
            private_chat(ALICE), caption="my cat", photo=[small.as_photo_size(90, 60), large.as_photo_size(1280, 960)]
        )
        (event,) = await telegram_host.wait_for_events(1)
        assert telegram_server.count("getFile") == 0
        assert not telegram_server.downloads
        (attachment,) = event.attachments
        assert attachment.url.startswith("asset://")
        assert attachment.media_type == "image/jpeg"
        first = await telegram_host.read_asset(attachment.url)
        second = await telegram_host.read_asset(attachment.url)
    assert first.data == second.data == JPEG
    assert telegram_server.count("getFile") == 1
    assert telegram_server.downloads == [large.path]
    assert event.content == "my cat"


async def test_locator_holds_the_file_id_and_never_the_token(telegram_server, telegram_host, telegram_connection):
    document = telegram_server.add_file(b"%PDF-1.4 report")
    async with running(telegram_connection()):
        telegram_server.push_message(
            private_chat(ALICE), document=document.as_document("report.pdf", "application/pdf")
        )
        (event,) = await telegram_host.wait_for_events(1)
    stored = "".join(path.read_text() for path in telegram_host.resources.assets.root.glob("*.json"))
    assert document.file_id in stored
    assert telegram_server.token not in stored
    assert telegram_server.token.split(":")[1] not in stored
    assert event.attachments[0].name == "report.pdf"
    assert event.attachments[0].media_type == "application/pdf"


async def test_largest_photo_within_the_limit_is_chosen(telegram_server, telegram_host, telegram_connection):
    fits = telegram_server.add_file(b"\xff\xd8\xff fits", size=900)
    too_big = telegram_server.add_file(b"\xff\xd8\xff big", size=5000)
    async with running(telegram_connection(max_download_bytes=1000)):
        telegram_server.push_message(
            private_chat(ALICE), photo=[fits.as_photo_size(320, 240), too_big.as_photo_size(1280, 960)]
        )
        (event,) = await telegram_host.wait_for_events(1)
        blob = await telegram_host.read_asset(event.attachments[0].url)
    assert blob.data == b"\xff\xd8\xff fits"
    assert "refusedFiles" not in event.extra


async def test_oversized_document_is_not_fetched_and_the_model_is_told(
    telegram_server, telegram_host, telegram_connection
):
    huge = telegram_server.add_file(b"%PDF-1.4 tiny stand-in", size=25 * 1024 * 1024)
    async with running(telegram_connection()):
        telegram_server.push_message(
            private_chat(ALICE), caption="read this", document=huge.as_document("big.pdf", "application/pdf")
        )
        (event,) = await telegram_host.wait_for_events(1)
    assert event.attachments == ()
    assert event.content.startswith("read this\n[document 'big.pdf' (25.0 MiB) was not downloaded")
    assert "20.0 MiB limit" in event.content
    assert event.extra["refusedFiles"] == [
        {"kind": "document", "name": "big.pdf", "size": 25 * 1024 * 1024, "reason": "too_large"}
    ]
    assert telegram_server.count("getFile") == 0


async def test_file_that_grew_past_the_limit_is_refused_at_read(telegram_server, telegram_host, telegram_connection):
    # The message claimed no size; getFile reports one over Telegram's limit: the read fails cleanly.
    liar = telegram_server.add_file(b"%PDF", size=21 * 1024 * 1024)
    document = {k: v for k, v in liar.as_document("x.pdf", "application/pdf").items() if k != "file_size"}
    async with running(telegram_connection()):
        telegram_server.push_message(private_chat(ALICE), document=document)
        (event,) = await telegram_host.wait_for_events(1)
        with pytest.raises(ResourceError) as caught:
            await telegram_host.read_asset(event.attachments[0].url)
    assert caught.value.code == "too_large"
    assert telegram_server.token not in str(caught.value)


@pytest.mark.parametrize(
    ("kind", "fields", "media_type", "name"),
    [
        ("voice", {"duration": 3, "mime_type": "audio/ogg"}, "audio/ogg", "voice.ogg"),
        (
            "sticker",
            {"width": 512, "height": 512, "is_animated": False, "is_video": False, "emoji": "😺"},
            "image/webp",
            "sticker.webp",
        ),
        (
            "sticker",
            {"width": 512, "height": 512, "is_animated": True, "is_video": False},
            "application/x-tgsticker",
            "sticker.tgs",
        ),
        (
            "sticker",
            {"width": 512, "height": 512, "is_animated": False, "is_video": True},
            "video/webm",
            "sticker.webm",
        ),
    ],
)
async def test_voice_and_stickers(kind, fields, media_type, name, telegram_server, telegram_host, telegram_connection):
    fake = telegram_server.add_file(b"OggS voice or sticker bytes")
    item = {"file_id": fake.file_id, "file_unique_id": fake.file_unique_id, "file_size": fake.size, **fields}
    async with running(telegram_connection()):
        telegram_server.push_message(private_chat(ALICE), **{kind: item})
        (event,) = await telegram_host.wait_for_events(1)
        blob = await telegram_host.read_asset(event.attachments[0].url)
    (attachment,) = event.attachments
    assert (attachment.media_type, attachment.name) == (media_type, name)
    assert blob.data == fake.data
    if fields.get("emoji"):
        assert event.extra["sticker"] == {"emoji": "😺"}


async def test_assets_need_the_connection_running(telegram_server, telegram_host, telegram_connection):
    fake = telegram_server.add_file(JPEG)
    async with running(telegram_connection()):
        telegram_server.push_message(private_chat(ALICE), photo=[fake.as_photo_size(10, 10)])
        (event,) = await telegram_host.wait_for_events(1)
    with pytest.raises(ResourceError) as caught:
        await telegram_host.read_asset(event.attachments[0].url)
    assert caught.value.code == "unavailable"
    async with running(telegram_connection()):  # the same bot again: assets captured before are readable
        assert (await telegram_host.read_asset(event.attachments[0].url)).data == JPEG
