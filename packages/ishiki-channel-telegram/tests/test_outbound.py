"""Sending: splitting at 4,096 UTF-16 units, HTML with a plain-text fallback, replies, typing, files, errors."""

from __future__ import annotations

import anyio
import pytest
from ishiki_host import Blob, OutboundFile, utf16_len

from ishiki_channel_telegram.testing import Fault, group_chat, private_chat, running, user

pytestmark = pytest.mark.anyio

ALICE = user(42, "Alice")
CHAT = "private:42"


async def _started(telegram_server, telegram_host):
    """Alice writes first (a bot can only write to people who wrote to it); returns her message's id."""
    message = telegram_server.push_message(private_chat(ALICE), "hi")
    await telegram_host.wait_for_events(1)
    return str(message["message_id"])


def _long_reply(units: int) -> str:
    paragraph = "A sentence with an emoji 😀 and **some bold** words to fill the line. " * 8
    text = ""
    while utf16_len(text) < units:
        text += paragraph.strip() + "\n\n"
    while utf16_len(text) > units:
        text = text[:-1]
    return text


async def test_9000_units_arrive_as_three_messages_within_the_limit(
    telegram_server, telegram_host, telegram_connection
):
    connection = telegram_connection()
    text = _long_reply(9000)
    async with running(connection):
        first = await _started(telegram_server, telegram_host)
        result = await connection.send(CHAT, text, reply_to=first)
    assert result.ok
    assert len(result.ids) == 3
    sent = telegram_server.sent
    assert [str(m.message_id) for m in sent] == list(result.ids)
    assert all(utf16_len(m.text) <= 4096 for m in sent)
    assert all(utf16_len(m.source) > 0 and m.parse_mode == "HTML" for m in sent)
    assert [m.reply_to for m in sent] == [int(first), None, None]
    shown = "".join(m.text for m in sent).replace("\n", "").replace(" ", "")
    assert shown == text.replace("**", "").replace("\n", "").replace(" ", "")


async def test_markdown_is_rendered_as_html_entities(telegram_server, telegram_host, telegram_connection):
    connection = telegram_connection()
    async with running(connection):
        await _started(telegram_server, telegram_host)
        await connection.send(
            CHAT, "**bold** and `a<b>` and [docs](https://example.com/?a=1&b=2)\n```python\nx = 1\n```"
        )
    (message,) = telegram_server.sent
    assert message.text == "bold and a<b> and docs\n\nx = 1"  # a code block is a block of its own
    kinds = [(e["type"], e.get("url") or e.get("language")) for e in message.entities]
    assert kinds == [("bold", None), ("code", None), ("text_link", "https://example.com/?a=1&b=2"), ("pre", "python")]


async def test_refused_markup_is_sent_again_as_plain_text(telegram_server, telegram_host, telegram_connection, caplog):
    connection = telegram_connection()
    async with running(connection):
        await _started(telegram_server, telegram_host)
        telegram_server.fail(
            "sendMessage",
            Fault(400, "Bad Request: can't parse entities: Can't find end of the entity starting at byte offset 0"),
        )
        result = await connection.send(CHAT, "**bold** text")
    assert result.ok
    (message,) = telegram_server.sent
    assert (message.text, message.parse_mode) == ("bold text", None)  # what the HTML showed, without marks
    assert [call.params.get("parse_mode") for call in telegram_server.calls if call.method == "sendMessage"] == [
        "HTML",
        None,
    ]
    assert "sending it as plain text" in caplog.text


async def test_plain_parse_mode_sends_text_as_written(telegram_server, telegram_host, telegram_connection):
    connection = telegram_connection(parse_mode="plain")
    async with running(connection):
        await _started(telegram_server, telegram_host)
        await connection.send(CHAT, "a <b>tag</b> & **stars**")
    (message,) = telegram_server.sent
    assert (message.text, message.parse_mode, message.entities) == ("a <b>tag</b> & **stars**", None, ())


async def test_reply_to_a_missing_message_still_sends(telegram_server, telegram_host, telegram_connection):
    connection = telegram_connection()
    async with running(connection):
        await _started(telegram_server, telegram_host)
        result = await connection.send(CHAT, "answer", reply_to="999")
    assert result.ok
    assert telegram_server.sent[0].reply_to is None


async def test_a_blocked_chat_is_an_error_result(telegram_server, telegram_host, telegram_connection):
    connection = telegram_connection()
    async with running(connection):
        await _started(telegram_server, telegram_host)
        telegram_server.blocked_chats.add(42)
        blocked = await connection.send(CHAT, "hello?")
    assert blocked.ids == ()
    assert blocked.error == "the message was not sent: Forbidden: bot was blocked by the user"


async def test_second_part_failing_keeps_the_first_id(telegram_server, telegram_host, telegram_connection):
    connection = telegram_connection()
    async with running(connection):
        await _started(telegram_server, telegram_host)
        telegram_server.fail("sendMessage", Fault(400, "Bad Request: message thread not found"), skip=1)
        result = await connection.send(CHAT, _long_reply(6000))
    assert len(result.ids) == 1
    assert result.error == "part 2 of 2 was not sent: Bad Request: message thread not found"


async def test_bad_targets_are_errors_not_exceptions(telegram_server, telegram_host, telegram_connection):
    connection = telegram_connection()
    async with running(connection):
        await _started(telegram_server, telegram_host)
        not_numeric = await connection.send("group:general", "x")
        bad_reply = await connection.send(CHAT, "x", reply_to="abc")
        empty = await connection.send(CHAT, "  \n ")
        unknown_chat = await connection.send("group:-5", "x")
    assert "not a Telegram chat" in (not_numeric.error or "")
    assert "not a Telegram message id" in (bad_reply.error or "")
    assert empty.error == "nothing to send: the text is empty"
    assert unknown_chat.error == "the message was not sent: Bad Request: chat not found"
    assert telegram_server.sent == []


async def test_rate_limited_send_waits_retry_after_on_the_clock(
    telegram_server, telegram_host, telegram_connection, fake_clock
):
    connection = telegram_connection()
    async with running(connection):
        await _started(telegram_server, telegram_host)
        telegram_server.fail("sendMessage", Fault.rate_limited(7))
        results = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _collect(results, connection.send(CHAT, "patience")))
            await fake_clock.wait_for_sleepers(1)
            assert fake_clock.next_deadline() == fake_clock.now() + 7
            assert telegram_server.sent == []
            await fake_clock.advance(7)
        assert results[0].ok
    assert [m.text for m in telegram_server.sent] == ["patience"]


async def test_typing_and_its_failures(telegram_server, telegram_host, telegram_connection):
    connection = telegram_connection()
    async with running(connection):
        await _started(telegram_server, telegram_host)
        await connection.send_typing(CHAT)
        telegram_server.fail("sendChatAction", Fault(500, "Internal Server Error"))
        await connection.send_typing(CHAT)  # logged, not raised
        await connection.send_typing("group:-1")  # unknown chat: logged, not raised
    assert telegram_server.actions == [(42, "typing")]


async def test_files_go_as_photo_or_document(telegram_server, telegram_host, telegram_connection):
    connection = telegram_connection()
    png = Blob(b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "image/png", "chart.png")
    pdf = Blob(b"%PDF-1.4 report", "application/pdf", "report.pdf")
    long_caption = "c" * 1500
    async with running(connection):
        await _started(telegram_server, telegram_host)
        result = await connection.send_files(
            CHAT, [OutboundFile(png, caption="the chart"), OutboundFile(pdf, caption=long_caption)]
        )
    assert result.ok
    assert len(result.ids) == 3
    photo, document, caption = telegram_server.sent
    assert (photo.method, photo.text, photo.file, photo.file_name) == ("sendPhoto", "the chart", png.data, "chart.png")
    assert (document.method, document.text, document.file) == ("sendDocument", "", pdf.data)
    assert (caption.method, caption.text) == ("sendMessage", long_caption)


async def test_a_photo_telegram_refuses_goes_as_a_document(telegram_server, telegram_host, telegram_connection):
    connection = telegram_connection()
    jpeg = Blob(b"\xff\xd8\xff" + b"x" * 32, "image/jpeg", "wide.jpg")
    async with running(connection):
        await _started(telegram_server, telegram_host)
        telegram_server.fail("sendPhoto", Fault(400, "Bad Request: PHOTO_INVALID_DIMENSIONS"))
        result = await connection.send_files(CHAT, [OutboundFile(jpeg)])
        forced = await connection.send_files(CHAT, [OutboundFile(jpeg, extra={"send_as": "document"})])
    assert result.ok
    assert forced.ok
    assert [m.method for m in telegram_server.sent] == ["sendDocument", "sendDocument"]


async def test_group_messages_go_to_the_group(telegram_server, telegram_host, telegram_connection):
    group = group_chat(-100555, "Room")
    connection = telegram_connection()
    async with running(connection):
        telegram_server.push_message(group, "hi", sender=ALICE)
        await telegram_host.wait_for_events(1)
        result = await connection.send("group:-100555", "hello room")
    assert result.ok
    assert telegram_server.sent[0].chat_id == -100555


async def test_sending_while_not_running_is_an_error_result(telegram_connection):
    connection = telegram_connection()
    text = await connection.send(CHAT, "too early")
    files = await connection.send_files(CHAT, [OutboundFile(Blob(b"x", "text/plain", "x.txt"))])
    await connection.send_typing(CHAT)  # nothing to show, nothing raised
    assert (
        text.error
        == files.error
        == "telegram account bot 7000000001 is not connected (starting, reconnecting or stopped)"
    )


async def _collect(results, coroutine):
    results.append(await coroutine)
