"""Inbound shaping through a running connection: chats, senders, quotes, mentions, edits, deletions."""

from __future__ import annotations

import logging

import pytest

from ishiki_channel_telegram.testing import entity, group_chat, private_chat, running, user

pytestmark = pytest.mark.anyio

ALICE = user(42, "Alice", username="alice", last_name="Liddell")
BOB = user(43, "Bob")
GROUP = group_chat(-1001234567890, "Tea party")
EMOJI = "👩‍👩‍👧😀𝕏 "  # a ZWJ family, an emoji and a mathematical letter: all outside the BMP


async def test_direct_message_is_shaped(telegram_server, telegram_host, telegram_connection, fake_clock):
    connection = telegram_connection()
    async with running(connection):
        telegram_server.push_message(private_chat(ALICE), "hello there")
        (event,) = await telegram_host.wait_for_events(1)
    assert event.kind == "message.created"
    assert event.sid == f"telegram:{telegram_server.bot['id']}" == connection.sid
    assert event.channel_id == "private:42"
    assert event.is_direct
    assert event.user is not None
    assert (event.user.id, event.user.name) == ("42", "Alice Liddell")
    assert event.content == "hello there"
    assert event.message_id == "1"
    assert event.timestamp == fake_clock.now()
    assert not event.mentions_self
    assert event.quote is None
    assert event.extra == {"updateId": 500_000, "chatType": "private", "username": "alice"}


async def test_group_message_without_mention_is_recorded_unaddressed(
    telegram_server, telegram_host, telegram_connection
):
    async with running(telegram_connection()):
        telegram_server.push_message(GROUP, "just chatting about @someone_else", sender=BOB)
        (event,) = await telegram_host.wait_for_events(1)
    assert event.channel_id == "group:-1001234567890"
    assert not event.is_direct
    assert not event.mentions_self
    assert event.extra["mentionRequired"] is True
    assert event.extra["chatTitle"] == "Tea party"
    assert event.extra["chatType"] == "supergroup"


def _mention_ways(bot_id: int, username: str) -> dict[str, tuple[str, list[dict], bool]]:
    """Each way to address the bot, after astral characters: (text, entities, is a reply to the bot)."""
    mention = f"{EMOJI}hey @{username.upper()} look"
    text_mention = f"{EMOJI}hey Ishiki look"
    command = f"{EMOJI}/start@{username.lower()} now"
    return {
        "mention": (mention, [entity(mention, f"@{username.upper()}", "mention")], False),
        "text_mention": (
            text_mention,
            [entity(text_mention, "Ishiki", "text_mention", user={"id": bot_id, "is_bot": True, "first_name": "I"})],
            False,
        ),
        "bot_command": (command, [entity(command, f"/start@{username.lower()}", "bot_command")], False),
        "reply": (f"{EMOJI}and you?", [], True),
    }


@pytest.mark.parametrize("way", ["mention", "text_mention", "bot_command", "reply"])
async def test_each_way_of_addressing_the_bot(way, telegram_server, telegram_host, telegram_connection):
    text, entities, is_reply = _mention_ways(telegram_server.bot["id"], telegram_server.bot["username"])[way]
    connection = telegram_connection()
    async with running(connection):
        telegram_server.push_message(GROUP, "warm-up", sender=BOB)
        await telegram_host.wait_for_events(1)
        reply_to = None
        if is_reply:
            await connection.send("group:-1001234567890", "I am the bot")
            reply_to = telegram_server.messages[(GROUP["id"], telegram_server.sent[-1].message_id)]
        telegram_server.push_message(GROUP, text, sender=BOB, entities=entities, reply_to=reply_to)
        events = await telegram_host.wait_for_events(2)
    assert events[1].mentions_self, way
    assert (events[1].quote is not None and events[1].quote.from_self) is is_reply
    assert events[1].content == text


@pytest.mark.parametrize(
    ("text", "part", "kind"),
    [
        (f"{EMOJI}hey @IshikiTestBotX look", "@IshikiTestBotX", "mention"),  # another bot, same prefix
        (f"{EMOJI}/start@OtherBot now", "/start@OtherBot", "bot_command"),
        (f"{EMOJI}/start now", "/start", "bot_command"),  # a command without @ is for every bot
    ],
)
async def test_near_misses_do_not_address_the_bot(
    text, part, kind, telegram_server, telegram_host, telegram_connection
):
    async with running(telegram_connection()):
        telegram_server.push_message(GROUP, text, sender=BOB, entities=[entity(text, part, kind)])
        (event,) = await telegram_host.wait_for_events(1)
    assert not event.mentions_self


async def test_offsets_counted_in_code_points_are_not_trusted(telegram_server, telegram_host, telegram_connection):
    # A client bug that counts code points would point two units early per astral character: no match.
    text = f"{EMOJI}@IshikiTestBot"
    wrong = {"type": "mention", "offset": len(EMOJI), "length": len("@IshikiTestBot")}
    async with running(telegram_connection()):
        telegram_server.push_message(GROUP, text, sender=BOB, entities=[wrong, {"type": "mention", "offset": 999}])
        (event,) = await telegram_host.wait_for_events(1)
    assert not event.mentions_self


async def test_reply_to_a_person_is_a_quote_not_a_mention(telegram_server, telegram_host, telegram_connection):
    async with running(telegram_connection()):
        first = telegram_server.push_message(GROUP, "the original words", sender=BOB)
        telegram_server.push_message(GROUP, "agreed", sender=ALICE, reply_to=first)
        events = await telegram_host.wait_for_events(2)
    quote = events[1].quote
    assert quote is not None
    assert quote.message_id == str(first["message_id"])
    assert quote.text == "the original words"
    assert quote.user is not None
    assert quote.user.id == "43"
    assert not quote.from_self
    assert not events[1].mentions_self


async def test_chat_policy_overrides_the_account(telegram_server, telegram_host, telegram_connection):
    quiet = group_chat(-100777, "Quiet room")
    async with running(telegram_connection(chats={"group:-100777": {"mention_required": False}})):
        telegram_server.push_message(GROUP, "one", sender=BOB)
        telegram_server.push_message(quiet, "two", sender=BOB)
        telegram_server.push_message(private_chat(ALICE), "three")
        events = await telegram_host.wait_for_events(3)
    assert [e.extra.get("mentionRequired") for e in events] == [True, False, None]


async def test_an_edit_is_a_new_event_marked_edited(telegram_server, telegram_host, telegram_connection, fake_clock):
    async with running(telegram_connection()):
        original = telegram_server.push_message(private_chat(ALICE), "helo")
        await telegram_host.wait_for_events(1)
        await fake_clock.advance(30)
        telegram_server.edit_message(original, "hello")
        events = await telegram_host.wait_for_events(2)
    assert [e.content for e in events] == ["helo", "hello"]
    assert events[0].message_id == events[1].message_id
    assert "editedAt" not in events[0].extra
    assert events[1].extra["editedAt"] == int(fake_clock.now()) == events[1].timestamp


async def test_business_deletions_become_deleted_events(telegram_server, telegram_host, telegram_connection):
    async with running(telegram_connection()):
        telegram_server.delete_business_messages(private_chat(ALICE), [7, 8])
        events = await telegram_host.wait_for_events(2)
    assert [(e.kind, e.channel_id, e.message_id, e.user) for e in events] == [
        ("message.deleted", "private:42", "7", None),
        ("message.deleted", "private:42", "8", None),
    ]


async def test_channel_posts_speak_for_the_channel(telegram_server, telegram_host, telegram_connection):
    news = group_chat(-1009, "News", kind="channel")
    async with running(telegram_connection()):
        telegram_server.push_message(news, "breaking")
        (event,) = await telegram_host.wait_for_events(1)
    assert event.channel_id == "group:-1009"
    assert event.user is not None
    assert (event.user.id, event.user.name) == ("-1009", "News")


async def test_own_messages_are_dropped_by_message_id(telegram_server, telegram_host, telegram_connection):
    connection = telegram_connection()
    async with running(connection):
        telegram_server.push_message(GROUP, "start", sender=BOB)
        await telegram_host.wait_for_events(1)
        result = await connection.send("group:-1001234567890", "my own words")
        own = telegram_server.messages[(GROUP["id"], int(result.ids[0]))]
        telegram_server.push_update({"message": own})  # e.g. echoed back by a relay
        telegram_server.push_message(GROUP, "after", sender=BOB)
        events = await telegram_host.wait_for_events(2)
        await telegram_server.until(lambda: not telegram_server.pending)
    assert [e.content for e in events] == ["start", "after"]


async def test_unknown_malformed_and_service_updates_are_skipped_and_confirmed(
    telegram_server, telegram_host, telegram_connection, caplog
):
    caplog.set_level(logging.DEBUG, logger="ishiki.channel.test")
    async with running(telegram_connection(allowed_updates=["message", "poll"])):
        unknown = telegram_server.push_update({"poll": {"id": "1", "question": "?"}})
        malformed = telegram_server.push_update({"message": {"chat": "not a chat", "message_id": 5}})
        telegram_server.push_update({"message": {**telegram_server.new_message(GROUP), "new_chat_members": [BOB]}})
        telegram_server.push_message(private_chat(ALICE), "still here")
        (event,) = await telegram_host.wait_for_events(1)
        await telegram_server.until(lambda: not telegram_server.pending)
    assert event.content == "still here"
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and f"ignored update {unknown}" in r.getMessage()]
    assert debug
    assert "poll" in debug[0].getMessage()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"malformed update {malformed}" in message and "message.chat" in message for message in warnings)


async def test_captions_and_their_entities_address_the_bot(telegram_server, telegram_host, telegram_connection):
    photo = telegram_server.add_file(b"\xff\xd8\xff fake jpeg")
    caption = f"{EMOJI}look @ishikitestbot"
    async with running(telegram_connection()):
        telegram_server.push_message(
            GROUP,
            sender=BOB,
            caption=caption,
            caption_entities=[entity(caption, "@ishikitestbot", "mention")],
            photo=[photo.as_photo_size(90, 60)],
        )
        (event,) = await telegram_host.wait_for_events(1)
    assert event.content == caption
    assert event.mentions_self
    assert len(event.attachments) == 1
