"""Replies shown while they are written, over the fake Bot API: draft bubbles in private chats, one edited
message in groups and after a refusal, the pace on the host's clock, and the final text delivered once."""

from __future__ import annotations

import logging

import anyio
import pytest
from ishiki_host import Draft, DraftingConnection

from ishiki_channel_telegram.drafts import CUT_OFF
from ishiki_channel_telegram.render import render_parts
from ishiki_channel_telegram.testing import group_chat, private_chat, running, user

pytestmark = pytest.mark.anyio

ALICE, BOB = user(42, "Alice"), user(43, "Bob")
PRIVATE, OTHER, GROUP = "private:42", "private:43", "group:-100500"
TEAM = group_chat(-100500, "Team")


async def _met(telegram_server, telegram_host):
    """Alice, Bob and the team wrote to the bot (it may only write back); returns the id of Alice's message."""
    first = telegram_server.push_message(private_chat(ALICE), "hi")
    telegram_server.push_message(private_chat(BOB), "hi")
    telegram_server.push_message(TEAM, "hello bot", sender=ALICE)
    await telegram_host.wait_for_events(3)
    return str(first["message_id"])


async def _show(connection, channel, draft, wake_sleeper):
    """``show_draft``, which returns once the chat's pace has passed on the fake clock; returns that wait."""
    waits = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.show_draft, channel, draft)
        waits.append(await wake_sleeper())
    return waits[0]


async def test_drafts_off_is_not_a_drafting_connection(telegram_connection):
    assert isinstance(telegram_connection(), DraftingConnection)
    assert isinstance(telegram_connection(drafts="edit"), DraftingConnection)
    assert not isinstance(telegram_connection(drafts="off"), DraftingConnection)


def test_a_bare_yaml_off_means_off():
    import jsonschema
    import yaml

    from ishiki_channel_telegram.config import ACCOUNT_SCHEMA, TelegramAccount

    account = yaml.safe_load("token: '1:x'\ndrafts: off\n")  # YAML 1.1 reads a bare `off` as false
    assert account["drafts"] is False
    jsonschema.validate(account, ACCOUNT_SCHEMA)
    assert TelegramAccount.from_config(account).drafts == "off"


async def test_a_private_chat_gets_a_bubble_then_the_reply_once(
    telegram_server, telegram_host, telegram_connection, wake_sleeper
):
    connection = telegram_connection()
    async with running(connection):
        first = await _met(telegram_server, telegram_host)
        assert await _show(connection, PRIVATE, Draft("d1", "Hel", first), wake_sleeper) == 1.0
        assert await _show(connection, PRIVATE, Draft("d1", "Hello **wor", first), wake_sleeper) == 1.0
        result = await connection.finish_draft(PRIVATE, Draft("d1", "Hello **wor", first), "Hello **world**")
    frames = telegram_server.drafts
    assert [(frame.chat_id, frame.text, frame.parse_mode) for frame in frames] == [
        (42, "Hel", "HTML"),
        (42, "Hello **wor", "HTML"),  # an unclosed mark stays text until it is closed
    ]
    assert frames[0].draft_id == frames[1].draft_id != 0
    (reply,) = [message for message in telegram_server.sent if message.chat_id == 42]
    assert (reply.text, reply.reply_to, result.ids) == ("Hello world", int(first), (str(reply.message_id),))
    assert [entity["type"] for entity in reply.entities] == ["bold"]
    assert telegram_server.edits == []


async def test_a_group_gets_one_message_edited_at_its_pace_and_finished_in_place(
    telegram_server, telegram_host, telegram_connection, wake_sleeper
):
    connection = telegram_connection()
    telegram_server.min_edit_seconds = 3.0  # flood control: one edit in 3 s; the pace keeps to it
    final = "Answer: " + "long words " * 500  # over one message: the rest follows the edited one
    async with running(connection):
        await _met(telegram_server, telegram_host)
        draft = Draft("g1", "Answer", None)
        assert await _show(connection, GROUP, draft, wake_sleeper) == 3.0
        assert await _show(connection, GROUP, Draft("g1", "Answer: long", None), wake_sleeper) == 3.0
        assert await _show(connection, GROUP, Draft("g1", "Answer: long", None), wake_sleeper) == 3.0  # unchanged
        result = await connection.finish_draft(GROUP, draft, final)
    group = [message for message in telegram_server.sent if message.chat_id == TEAM["id"]]
    assert group[0].text == "Answer"
    assert [edit.text for edit in telegram_server.edits] == ["Answer: long", render_parts(final)[0].plain]
    assert result.ok
    assert result.ids[0] == str(group[0].message_id)
    assert len(result.ids) == len(group) == 2
    shown = telegram_server.shown(TEAM["id"], group[0].message_id) + " " + group[1].text
    assert shown.split() == final.split()
    assert not [call for call in telegram_server.calls if not call.ok]  # no 429, no "not modified"
    assert telegram_server.drafts == []  # no bubbles in groups


async def test_a_server_without_drafts_falls_back_to_editing_for_the_account(
    telegram_server, telegram_host, telegram_connection, wake_sleeper, caplog
):
    telegram_server.drafts_refused = "method"
    connection = telegram_connection()
    async with running(connection):
        first = await _met(telegram_server, telegram_host)
        await _show(connection, PRIVATE, Draft("a", "one", first), wake_sleeper)
        await _show(connection, PRIVATE, Draft("a", "one two", first), wake_sleeper)
        await _show(connection, OTHER, Draft("b", "hello", None), wake_sleeper)
        result = await connection.finish_draft(PRIVATE, Draft("a", "one two", first), "one two three")
    assert telegram_server.count("sendMessageDraft") == 1  # refused once, never asked again
    alice = [message for message in telegram_server.sent if message.chat_id == 42 and message.text == "one"]
    assert len(alice) == 1
    assert alice[0].reply_to == int(first)
    assert result.ids == (str(alice[0].message_id),)
    assert telegram_server.shown(42, alice[0].message_id) == "one two three"
    assert [message.text for message in telegram_server.sent if message.chat_id == 43] == ["hello"]
    refusals = [r for r in caplog.records if "sendMessageDraft" in r.getMessage()]
    assert [r.levelno for r in refusals] == [logging.WARNING]


async def test_a_refused_chat_falls_back_alone(telegram_server, telegram_host, telegram_connection, wake_sleeper):
    connection = telegram_connection()
    async with running(connection):
        await _met(telegram_server, telegram_host)
        telegram_server.drafts_refused = "chat"
        await _show(connection, PRIVATE, Draft("a", "for Alice", None), wake_sleeper)
        telegram_server.drafts_refused = None
        await _show(connection, OTHER, Draft("b", "for Bob", None), wake_sleeper)
        await _show(connection, PRIVATE, Draft("c", "Alice again", None), wake_sleeper)
    assert [(frame.chat_id, frame.text) for frame in telegram_server.drafts] == [(43, "for Bob")]
    assert [m.text for m in telegram_server.sent if m.chat_id == 42 and m.text != "hi"] == ["for Alice", "Alice again"]


async def test_drafts_edit_never_uses_bubbles(telegram_server, telegram_host, telegram_connection, wake_sleeper):
    connection = telegram_connection(drafts="edit", draft_edit_seconds=2)
    async with running(connection):
        await _met(telegram_server, telegram_host)
        assert await _show(connection, PRIVATE, Draft("a", "draft", None), wake_sleeper) == 2.0
    assert telegram_server.count("sendMessageDraft") == 0
    assert [m.text for m in telegram_server.sent if m.chat_id == 42] == ["draft"]


@pytest.mark.parametrize("why", ["failed", "aborted"])
async def test_a_cut_off_draft_says_so(telegram_server, telegram_host, telegram_connection, wake_sleeper, why):
    connection = telegram_connection()
    async with running(connection):
        await _met(telegram_server, telegram_host)
        await _show(connection, GROUP, Draft("g", "half an **answ", None), wake_sleeper)
        await connection.drop_draft(GROUP, Draft("g", "half an **answer**", None), why)
    (message,) = [m for m in telegram_server.sent if m.chat_id == TEAM["id"] and m.text != "hello bot"]
    assert telegram_server.shown(TEAM["id"], message.message_id) == f"half an answer\n\n{CUT_OFF[why]}"


async def test_a_draft_before_tools_is_taken_back(telegram_server, telegram_host, telegram_connection, wake_sleeper):
    connection = telegram_connection()
    async with running(connection):
        await _met(telegram_server, telegram_host)
        await _show(connection, GROUP, Draft("g", "Let me look that up", None), wake_sleeper)
        await _show(connection, PRIVATE, Draft("p", "Let me look", None), wake_sleeper)
        await connection.drop_draft(GROUP, Draft("g", "Let me look that up", None), "tools")
        await connection.drop_draft(PRIVATE, Draft("p", "Let me look", None), "tools")  # a bubble fades
    (message,) = [m for m in telegram_server.sent if m.chat_id == TEAM["id"] and m.text != "hello bot"]
    assert telegram_server.deleted == [(TEAM["id"], message.message_id)]


async def test_a_deleted_draft_message_gets_the_reply_anew(
    telegram_server, telegram_host, telegram_connection, wake_sleeper
):
    connection = telegram_connection()
    async with running(connection):
        await _met(telegram_server, telegram_host)
        await _show(connection, GROUP, Draft("g", "soon", None), wake_sleeper)
        (draft_message,) = [m for m in telegram_server.sent if m.text == "soon"]
        del telegram_server.messages[(TEAM["id"], draft_message.message_id)]  # an admin deleted it
        result = await connection.finish_draft(GROUP, Draft("g", "soon", None), "the full answer")
    (reply,) = [m for m in telegram_server.sent if m.text == "the full answer"]
    assert result.ids == (str(reply.message_id),)


async def test_a_429_is_waited_out(telegram_server, telegram_host, telegram_connection, wake_sleeper, sleeping):
    connection = telegram_connection(draft_edit_seconds=1)
    telegram_server.min_edit_seconds = 4.0  # stricter than the pace: Telegram answers 429, retry after 3 s
    async with running(connection):
        await _met(telegram_server, telegram_host)
        await _show(connection, GROUP, Draft("g", "a", None), wake_sleeper)
        await _show(connection, GROUP, Draft("g", "a b", None), wake_sleeper)  # the first edit: no limit yet
        async with anyio.create_task_group() as tg:
            tg.start_soon(connection.show_draft, GROUP, Draft("g", "a b c", None))
            assert await wake_sleeper() == 3.0  # the retry_after of the 429; the pace has passed meanwhile
    assert [edit.text for edit in telegram_server.edits] == ["a b", "a b c"]
