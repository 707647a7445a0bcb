"""Outbound: the model's Markdown as plain text with at and image segments, split at max_message_chars with the
first part replying; files as image or record segments; no typing indicator."""

from __future__ import annotations

import pytest
from ishiki_host import Blob, OutboundFile

from ishiki_channel_onebot.render import render_messages, render_plain
from ishiki_channel_onebot.segments import at, image, reply, text
from ishiki_channel_onebot.testing import running

pytestmark = pytest.mark.anyio


def test_markdown_becomes_what_qq_shows():
    assert render_plain("# Title\n\n**bold** _it_ `code` [site](https://x.org) https://y.org\n\n- a\n- b") == (
        "Title\n\nbold it code site (https://x.org) https://y.org\n\n• a\n• b"
    )


def test_mentions_and_images_become_segments_and_the_first_message_replies():
    (message,) = render_messages(
        "hi @123456, mail me at a@1234567.com\n\n![cat](https://c.org/c.png)", 3000, reply_to="9"
    )
    assert message == [
        reply("9"),
        text("hi "),
        at("123456"),
        text(", mail me at a@1234567.com"),
        image("https://c.org/c.png"),
    ]


def test_a_long_reply_is_split_at_the_limit_at_paragraphs():
    paragraphs = ["word " * 9 for _ in range(4)]
    messages = render_messages("\n\n".join(paragraphs), 100, reply_to="9")
    assert len(messages) == 2
    assert messages[0][0] == reply("9")
    assert all(m[0].type == "text" for m in messages[1:])
    assert all(len("".join(s.get("text") or "" for s in m)) <= 100 for m in messages)


async def test_send_splits_replies_and_files_go_as_images(onebot, onebot_connection):
    connection = onebot_connection(max_message_chars=60)
    png = OutboundFile(Blob(b"\x89PNG\r\n\x1a\n", "image/png"), caption="a **cat**")
    pdf = OutboundFile(Blob(b"%PDF", "application/pdf"))
    async with running(connection):
        await connection.linked()
        long = await connection.send("group:300", "one " * 20, reply_to="77")
        files = await connection.send_files("private:20001", [png])
        refused = await connection.send_files("private:20001", [pdf])
        await connection.send_typing("private:20001")
        bad = await connection.send("channel:5", "nowhere")
    assert len(long.ids) == 2
    assert long.ok
    assert [m.of_type("reply")[0].get("id") if m.of_type("reply") else None for m in onebot.sent[:2]] == ["77", None]
    picture = onebot.sent[2]
    assert picture.of_type("image")[0].get("file").startswith("base64://")
    assert picture.text == "a cat"
    assert files.ok
    assert refused.error == "OneBot v11 sends images and voice records, not application/pdf"
    assert "is not a OneBot chat" in (bad.error or "")
    assert not any(c.action.startswith("typing") for c in onebot.calls)
