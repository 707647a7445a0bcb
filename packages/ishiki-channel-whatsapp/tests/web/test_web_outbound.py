"""Sending through the device: chats, split text, WhatsApp's marks, replies that quote, files, typing, failures."""

from __future__ import annotations

import pytest
from ishiki_host import Blob, OutboundFile

from ishiki_channel_whatsapp.formatting import render_whatsapp
from ishiki_channel_whatsapp.web.errors import WhatsAppWebError
from ishiki_channel_whatsapp.web.outbound import media_kind
from ishiki_channel_whatsapp.web.testing import text

pytestmark = pytest.mark.anyio

ALICE = "491700000001@s.whatsapp.net"
GROUP = "120363000000000001@g.us"


@pytest.mark.parametrize(
    ("channel", "jid"),
    [
        ("private:491700000001", ALICE),
        ("private:123456789012345@lid", "123456789012345@lid"),
        (f"group:{GROUP}", GROUP),
        ("group:120363000000000001", GROUP),
    ],
)
async def test_each_kind_of_chat(running_web, device, channel, jid):
    async with running_web() as connection:
        result = await connection.send(channel, "hi")
        assert result.ok
        assert [(sent.chat, sent.text, sent.quote) for sent in device.sent] == [(jid, "hi", None)]
        assert result.ids == (device.sent[0].id,)


@pytest.mark.parametrize("channel", ["private:alice", "group:491700000001@s.whatsapp.net", "private:1@g.us"])
async def test_a_channel_that_is_no_whatsapp_chat(running_web, device, channel):
    async with running_web() as connection:
        result = await connection.send(channel, "hi")
        assert not result.ok
        assert "not a WhatsApp chat" in result.error
        assert device.sent == []


async def test_markdown_becomes_whatsapps_marks(running_web, device):
    async with running_web() as connection:
        await connection.send("private:491700000001", "## Plan\n**Tomorrow** ~~maybe~~ see [docs](https://x.io)")
        assert device.sent[0].text == "*Plan*\n\n*Tomorrow* ~maybe~ see docs (https://x.io)"  # a heading is a block


async def test_a_long_text_is_split_and_only_the_first_part_quotes(running_web, device, channel_host, incoming):
    async with running_web() as connection:
        device.emit(incoming(text("write me an essay"), message_id="3A01"))
        await channel_host.wait_for_events(1)
        result = await connection.send("private:491700000001", "word " * 2000, reply_to="3A01")
        assert result.ok
        assert len(device.sent) == 3
        assert all(len(sent.text) <= 4096 for sent in device.sent)
        assert device.sent[0].quote is not None
        assert (device.sent[0].quote.message_id, device.sent[0].quote.sender, device.sent[0].quote.text) == (
            "3A01",
            ALICE,
            "write me an essay",
        )
        assert [sent.quote for sent in device.sent[1:]] == [None, None]


async def test_a_reply_in_a_group_quotes_the_senders_own_jid(running_web, device, channel_host, incoming):
    async with running_web() as connection:
        device.emit(incoming(text("@bot hi"), chat=GROUP, sender="123456789012345@lid", message_id="3A02"))
        await channel_host.wait_for_events(1)
        await connection.send(f"group:{GROUP}", "hello", reply_to="3A02")
        assert device.sent[0].quote.sender == "123456789012345@lid"


async def test_a_reply_to_a_message_not_seen_lately_goes_without_the_quote(running_web, device):
    async with running_web() as connection:
        assert (await connection.send("private:491700000001", "hello", reply_to="3AOLD")).ok
        assert device.sent[0].quote is None


async def test_a_failure_names_the_part_and_keeps_what_went_out(running_web, device):
    async with running_web() as connection:
        first = await connection.send("private:491700000001", "one")
        device.fail_sends.append(WhatsAppWebError("WhatsApp send failed: 463", what="send"))
        result = await connection.send("private:491700000001", "x " * 3000)
        assert result.ids == ()
        assert result.error == "part 1 of 2: WhatsApp send failed: 463"
        assert first.ok


async def test_not_connected_is_a_send_error(web_connection):
    result = await web_connection().send("private:491700000001", "hi")
    assert result.error == "whatsapp account +491511234567 is not connected (stopped)"


@pytest.mark.parametrize(
    ("media_type", "size", "kind"),
    [
        ("image/jpeg", 10, "image"),
        ("image/png", 10, "image"),
        ("image/png", 17 * 1024 * 1024, "document"),
        ("image/gif", 10, "document"),
        ("video/mp4", 10, "video"),
        ("audio/ogg", 10, "audio"),
        ("application/pdf", 10, "document"),
    ],
)
def test_how_a_file_is_shown(media_type, size, kind):
    assert media_kind(media_type, size) == kind


async def test_files(running_web, device):
    files = [
        OutboundFile(Blob(b"\xff\xd8", "image/jpeg", "chart.jpg"), caption="**Q3**"),
        OutboundFile(Blob(b"%PDF", "application/pdf", "report.pdf")),
        OutboundFile(Blob(b"OggS", "audio/ogg", "note.ogg"), caption="listen"),
    ]
    async with running_web() as connection:
        result = await connection.send_files("private:491700000001", files)
        assert result.ok
        assert len(result.ids) == 4
        kinds = [
            (sent.media.kind, sent.media.name, sent.media.caption) if sent.media else sent.text for sent in device.sent
        ]
        assert kinds == [
            ("image", "chart.jpg", "*Q3*"),
            ("document", "report.pdf", None),
            ("audio", "note.ogg", None),
            "listen",
        ]


async def test_a_failed_file_names_it(running_web, device):
    async with running_web() as connection:
        device.fail_sends.append(WhatsAppWebError("WhatsApp upload failed: 413", what="upload"))
        files = [OutboundFile(Blob(b"%PDF", "application/pdf", "big.pdf"))]
        result = await connection.send_files("private:491700000001", files)
        assert result.error == "file 1 of 1 (big.pdf): WhatsApp upload failed: 413"


async def test_typing(running_web, device):
    async with running_web() as connection:
        await connection.send_typing(f"group:{GROUP}")
        await connection.send_typing("private:not-a-number")  # a courtesy: never raises
        assert device.typing == [GROUP]


@pytest.mark.parametrize(
    ("markdown", "whatsapp"),
    [
        ("**bold** and __bold__", "*bold* and *bold*"),
        ("# Title\ntext", "*Title*\n\ntext"),
        ("~~gone~~", "~gone~"),
        ("[https://a.io](https://a.io)", "https://a.io"),
        ("* item\n* item", "• item\n• item"),
        ("`**kept**` and\n```\n**kept too**\n```", "`**kept**` and\n\n```\n**kept too**\n```"),
        ("an _italic_ word", "an _italic_ word"),
    ],
)
def test_render(markdown, whatsapp):
    assert render_whatsapp(markdown) == whatsapp
