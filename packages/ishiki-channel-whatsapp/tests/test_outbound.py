"""Sending: text split at 4,096 characters, replies, read receipts with typing, files by upload, and each Graph
API error handled as it should be (retried, reported, or ending the channel)."""

from __future__ import annotations

import logging

import anyio
import pytest
from ishiki_host import Blob, OutboundFile

from ishiki_channel_whatsapp import WhatsAppAuthError
from ishiki_channel_whatsapp.testing import Fault, running

pytestmark = pytest.mark.anyio

ALICE = "4915112345678"
CHAT = f"private:{ALICE}"


async def sending(send, wake_sleeper, sleeps):
    """Run ``send()`` while waking the back-off sleeps it makes (``sleeps`` of them); its result and the delays."""
    box, delays = [], []

    async def run():
        box.append(await send())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        for _ in range(sleeps):
            delays.append(await wake_sleeper())
    return box[0], delays


async def test_a_reply_goes_to_the_chat_and_quotes_the_message(running_connection, whatsapp_graph):
    async with running_connection() as (connection, _driver):
        result = await connection.send(CHAT, "Tea is ready.", reply_to="wamid.IN1")
    (sent,) = whatsapp_graph.sent
    assert result.ids == (sent.id,)
    assert result.ok
    assert (sent.to, sent.type, sent.text, sent.reply_to) == (ALICE, "text", "Tea is ready.", "wamid.IN1")
    assert sent.body["recipient_type"] == "individual"
    assert sent.body["text"]["preview_url"] is False


async def test_a_9000_character_text_is_three_messages_within_the_limit_only_the_first_a_reply(
    running_connection, whatsapp_graph
):
    text = "\n\n".join(f"Paragraph {n}: " + "tea leaves and steam " * 20 for n in range(21))[:9000]
    async with running_connection() as (connection, _driver):
        result = await connection.send(CHAT, text, reply_to="wamid.IN1")
    sent = whatsapp_graph.sent
    assert len(sent) == 3
    assert result.ids == tuple(m.id for m in sent)
    assert all(len(m.text) <= 4096 for m in sent)
    assert [m.reply_to for m in sent] == ["wamid.IN1", None, None]
    assert " ".join(m.text for m in sent).split() == text.split()


@pytest.mark.parametrize(
    ("channel", "text", "words"),
    [
        ("private:alice", "hi", "is not a WhatsApp chat"),
        (CHAT, "   ", "nothing to send"),
    ],
)
async def test_what_cannot_be_sent_comes_back_as_an_error(running_connection, whatsapp_graph, channel, text, words):
    async with running_connection() as (connection, _driver):
        result = await connection.send(channel, text)
        failed = connection.status()["failedSends"]
    assert words in result.error
    assert whatsapp_graph.sent == []
    assert failed == 1


async def test_a_group_is_sent_to_as_a_group(running_connection, whatsapp_graph):
    async with running_connection() as (connection, _driver):
        await connection.send("group:120363025246125486", "hello all")
    assert (whatsapp_graph.sent[0].to, whatsapp_graph.sent[0].body["recipient_type"]) == ("120363025246125486", "group")


async def test_a_closed_window_is_not_retried_and_tells_the_operator(running_connection, whatsapp_graph, caplog):
    whatsapp_graph.closed_windows.add(ALICE)
    async with running_connection() as (connection, _driver):
        result = await connection.send(CHAT, "are you still there?")
    assert whatsapp_graph.count("messages") == 1
    assert result.ids == ()
    assert "until this person writes again" in result.error
    (logged,) = [r for r in caplog.records if "131047" in r.getMessage()]
    assert logged.levelno == logging.WARNING
    assert "set template_on_window_closed" in logged.getMessage()


async def test_a_closed_window_sends_the_template_once_until_the_person_writes_again(
    running_connection, whatsapp_graph
):
    whatsapp_graph.closed_windows.add(ALICE)
    template = {"name": "we_are_back", "language": "de"}
    async with running_connection(template_on_window_closed=template) as (connection, driver):
        first = await connection.send(CHAT, "one")
        second = await connection.send(CHAT, "two")
        whatsapp_graph.closed_windows.discard(ALICE)
        await driver.text(ALICE, "hi again")  # the window opens; the next closing may send it again
        whatsapp_graph.closed_windows.add(ALICE)
        third = await connection.send(CHAT, "three")
    templates = [m for m in whatsapp_graph.sent if m.type == "template"]
    assert len(templates) == 2
    assert templates[0].body["template"] == {"name": "we_are_back", "language": {"code": "de"}}
    assert first.ids == (templates[0].id,)
    assert "the template 'we_are_back' was sent instead" in first.error
    assert second.ids == ()
    assert "template" not in second.error
    assert third.ids == (templates[1].id,)


@pytest.mark.parametrize(
    "fault",
    [Fault.rate_limited(), Fault.pair_rate_limited(), Fault.server_error(503), Fault.cut_connection()],
    ids=["130429", "131056", "503", "cut"],
)
async def test_passing_troubles_are_retried_with_back_off_on_the_host_clock(
    running_connection, whatsapp_graph, wake_sleeper, fault
):
    whatsapp_graph.fail("messages", fault, fault)
    async with running_connection() as (connection, _driver):
        result, delays = await sending(lambda: connection.send(CHAT, "patience"), wake_sleeper, 2)
    assert result.ok
    assert len(whatsapp_graph.sent) == 1
    assert whatsapp_graph.count("messages") == 3
    assert 0.5 <= delays[0] < 1.0
    assert 1.0 <= delays[1] < 2.0


async def test_a_rate_limit_that_lasts_ends_the_send_after_its_tries(running_connection, whatsapp_graph, wake_sleeper):
    whatsapp_graph.fail("messages", *[Fault.rate_limited()] * 3)
    async with running_connection(send_tries=3) as (connection, _driver):
        result, _ = await sending(lambda: connection.send(CHAT, "too fast"), wake_sleeper, 2)
    assert whatsapp_graph.count("messages") == 3
    assert "Rate limit hit" in result.error


async def test_a_refused_request_is_not_retried(running_connection, whatsapp_graph):
    whatsapp_graph.fail("messages", Fault(131026, 400, "Message undeliverable"))
    async with running_connection() as (connection, _driver):
        result = await connection.send(CHAT, "hello?")
    assert result.error == "the message was not sent: Message undeliverable"
    assert whatsapp_graph.count("messages") == 1


async def test_a_later_part_that_fails_keeps_the_ids_of_the_parts_sent(running_connection, whatsapp_graph):
    whatsapp_graph.fail("messages", None, Fault(131026, 400, "Message undeliverable"))
    async with running_connection() as (connection, _driver):
        result = await connection.send(CHAT, "x" * 5000)
    (sent,) = whatsapp_graph.sent
    assert result.ids == (sent.id,)
    assert result.error == "part 2 of 2 was not sent: Message undeliverable"


async def test_an_expired_token_fails_the_send_and_stops_the_channel_with_one_clear_error(
    whatsapp_connection, whatsapp_graph
):
    connection = whatsapp_connection()
    results = []

    async def send_with_an_expired_token():
        async with running(connection):
            whatsapp_graph.expire_token()
            results.append(await connection.send(CHAT, "hello"))
            await anyio.sleep_forever()  # the connection ends by itself

    with pytest.raises(WhatsAppAuthError) as caught:
        await send_with_an_expired_token()
    assert "Session has expired" in results[0].error
    message = str(caught.value)
    assert "now refuses the access token" in message
    assert "access_token" in message
    assert whatsapp_graph.token not in message
    assert caught.value.fatal
    assert (await connection.send(CHAT, "after")).error.endswith("is not connected (starting, stopped or failed)")


async def test_typing_marks_the_newest_message_read_with_the_indicator(running_connection, whatsapp_graph, fake_clock):
    async with running_connection() as (connection, driver):
        await connection.send_typing(CHAT)  # nothing to mark yet
        _, (_first,) = await driver.text(ALICE, "one")
        _, (second,) = await driver.text(ALICE, "two")
        await connection.send_typing(CHAT)
        await connection.send_typing(CHAT)  # the host repeats it every few seconds: one call per 20 s
        await fake_clock.advance(20)
        await connection.send_typing(CHAT)
    assert [(r.message_id, r.typing) for r in whatsapp_graph.reads] == [(second, True), (second, True)]


async def test_without_mark_read_nothing_is_marked(running_connection, whatsapp_graph):
    async with running_connection(mark_read=False) as (connection, driver):
        await driver.text(ALICE, "one")
        await connection.send_typing(CHAT)
    assert whatsapp_graph.reads == []


async def test_a_failed_typing_indicator_is_only_logged(running_connection, whatsapp_graph):
    whatsapp_graph.fail("read", Fault.server_error())
    async with running_connection() as (connection, driver):
        await driver.text(ALICE, "one")
        await connection.send_typing(CHAT)
        result = await connection.send(CHAT, "still fine")
    assert result.ok


def _file(data, media_type, name, caption=None, **extra):
    return OutboundFile(Blob(data=data, media_type=media_type, name=name), caption, extra)


async def test_an_image_is_uploaded_then_sent_by_its_media_id(running_connection, whatsapp_graph):
    async with running_connection() as (connection, _driver):
        result = await connection.send_files(CHAT, [_file(b"\x89PNG...", "image/png", "tea.png", "our tea")])
    (upload,) = whatsapp_graph.uploads
    (sent,) = whatsapp_graph.sent
    assert (upload.data, upload.mime_type, upload.filename) == (b"\x89PNG...", "image/png", "tea.png")
    assert (sent.type, sent.media_id, sent.caption) == ("image", upload.id, "our tea")
    assert result.ids == (sent.id,)


async def test_other_files_are_documents_with_their_name_and_a_long_caption_follows(running_connection, whatsapp_graph):
    caption = "a very long caption " * 60
    async with running_connection() as (connection, _driver):
        result = await connection.send_files(CHAT, [_file(b"%PDF", "application/pdf", "menu.pdf", caption)])
    document, text = whatsapp_graph.sent
    assert (document.type, document.body["document"]["filename"], document.caption) == ("document", "menu.pdf", None)
    assert text.text == caption.strip()  # sent as a message, rendered: the trailing space goes
    assert result.ids == (document.id, text.id)


async def test_an_image_too_large_to_show_goes_as_a_document(running_connection, whatsapp_graph):
    async with running_connection() as (connection, _driver):
        await connection.send_files(CHAT, [_file(b"x" * (5 * 1024 * 1024 + 1), "image/jpeg", "big.jpg")])
    assert whatsapp_graph.sent[0].type == "document"


async def test_a_failed_upload_names_the_file(running_connection, whatsapp_graph):
    whatsapp_graph.fail("upload", Fault(131053, 400, "Media upload error"))
    async with running_connection() as (connection, _driver):
        result = await connection.send_files(CHAT, [_file(b"x", "image/png", "tea.png")])
    assert result.error == "tea.png was not sent: Media upload error"


async def test_nothing_is_sent_before_the_connection_runs(whatsapp_connection):
    connection = whatsapp_connection()
    assert "is not connected" in (await connection.send(CHAT, "early")).error
    assert "is not connected" in (await connection.send_files(CHAT, [])).error
    await connection.send_typing(CHAT)


async def test_parts_are_counted_in_utf16_units_so_emoji_never_overflow(running_connection, whatsapp_graph):
    from ishiki_host import utf16_len

    text = "🍵" * 3000  # 3,000 characters, 6,000 UTF-16 units
    async with running_connection() as (connection, _driver):
        result = await connection.send(CHAT, text)
    assert result.ok
    assert len(whatsapp_graph.sent) == 2
    assert all(utf16_len(m.text) <= 4096 for m in whatsapp_graph.sent)
    assert "".join(m.text for m in whatsapp_graph.sent) == text
