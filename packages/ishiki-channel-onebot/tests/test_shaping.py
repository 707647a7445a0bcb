"""Shaping OneBot frames into events: segments (array and CQ-code forms), names, mentions, quotes, attachments,
recalls, unknown segment types kept as text, and malformed frames refused with a clear error."""

from __future__ import annotations

import pytest
from ishiki_host.errors import EventInvalid

from ishiki_channel_onebot.config import OneBotAccount
from ishiki_channel_onebot.segments import Segment, cq_escape, parse_cq, parse_message
from ishiki_channel_onebot.shaping import Shaper
from ishiki_channel_onebot.testing import (
    at,
    face,
    group_message,
    group_recall,
    image,
    private_message,
    private_recall,
    record,
    reply,
    text,
)

pytestmark = pytest.mark.anyio

BOT = 10001


def shaper(messages: dict[str, dict] | None = None, **account) -> Shaper:
    async def lookup(message_id: str):
        return (messages or {}).get(message_id)

    return Shaper(
        str(BOT), OneBotAccount.from_config({"url": "ws://x", **account}), fetcher="onebot:10001", lookup=lookup
    )


async def shape(frame, **keys):
    shaped = await shaper(**keys).shape(frame, 1.0)
    assert shaped is not None
    return shaped


async def test_a_group_message_names_its_sender_by_card_then_nickname_and_keeps_its_segments_as_text():
    frame = group_message(BOT, 300, 20001, [text("hi "), at(BOT), text(" look "), face(14), at("all")], card="Bo",
                          nickname="Bob", role="admin")  # fmt: skip
    shaped = await shape(frame)
    event = shaped.event
    assert (event.channel_id, event.user.name, event.content) == ("group:300", "Bo", f"hi @{BOT} look [face:14]@all")
    assert event.mentions_self
    assert event.extra == {"messageType": "group", "subType": "normal", "mentionRequired": True, "role": "admin"}
    nameless = (await shape(group_message(BOT, 300, 20001, "x", card="", nickname="Bob"))).event
    assert nameless.user.name == "Bob"
    assert not nameless.mentions_self


async def test_the_cq_code_string_form_reads_as_the_array_form():
    segments = [text("a[1], & b "), at(20002), image("abc.jpg")]
    array = await shape(private_message(BOT, 20001, segments))
    cq = await shape(private_message(BOT, 20001, segments, as_cq=True))
    assert cq.event.content == array.event.content == "a[1], & b @20002"
    assert [a.locator for a in cq.attachments] == [a.locator for a in array.attachments]
    assert parse_cq("x[CQ:image,file=a&#44;b.jpg,url=http://h/?a=1&amp;b=2]y") == [
        text("x"), Segment("image", {"file": "a,b.jpg", "url": "http://h/?a=1&b=2"}), text("y")
    ]  # fmt: skip
    assert cq_escape("[a,b]&", in_code=True) == "&#91;a&#44;b&#93;&amp;"


async def test_a_reply_is_the_quote_and_a_reply_to_the_bot_addresses_it():
    quoted = {
        "message": [{"type": "text", "data": {"text": "I am the bot"}}],
        "sender": {"user_id": BOT, "nickname": "I"},
    }
    frame = group_message(BOT, 300, 20001, [reply(777), text("really?")])
    event = (await shape(frame, messages={"777": quoted})).event
    assert event.quote is not None
    assert (event.quote.message_id, event.quote.text, event.quote.from_self) == ("777", "I am the bot", True)
    assert event.mentions_self
    assert event.content == "really?"
    unknown = (await shape(frame)).event
    assert unknown.quote is not None
    assert unknown.quote.message_id == "777"
    assert not unknown.mentions_self


async def test_images_records_and_files_are_attachments_fetched_on_first_read():
    segments = [image("p.jpg", url="http://cdn/p"), record("v.amr"),
                Segment("file", {"name": "a.pdf", "url": "http://h/a.pdf", "file_size": "12"}),
                Segment("file", {"name": "big.iso", "url": "http://h/b", "file_size": str(10**12)})]  # fmt: skip
    shaped = await shape(private_message(BOT, 20001, segments))
    assert [(a.media_type, a.fetcher, dict(a.locator)) for a in shaped.attachments] == [
        ("image/jpeg", "onebot:10001", {"kind": "image", "file": "p.jpg"}),
        ("audio/mpeg", "onebot:10001", {"kind": "record", "file": "v.amr"}),
        ("application/octet-stream", "onebot:10001", {"kind": "file", "url": "http://h/a.pdf"}),
    ]
    assert shaped.event.content == f"[file big.iso: {10**12} bytes, over the download limit]"


async def test_an_unknown_segment_type_is_kept_as_text_with_its_type():
    segments = [text("see "), Segment("json", {"data": '{"app":"x"}'}), Segment("poke", {"type": 1})]
    event = (await shape(private_message(BOT, 20001, segments))).event
    assert event.content == 'see [json: {"data": "{\\"app\\":\\"x\\"}"}][poke: {"type": 1}]'


async def test_a_forward_names_its_onebot_resource():
    event = (await shape(private_message(BOT, 20001, [Segment("forward", {"id": "fw1"})]))).event
    assert event.content == f"[forwarded messages: read onebot://{BOT}/forward/fw1]"


async def test_recalls_become_message_deleted_in_their_chat():
    group = (await shape(group_recall(BOT, 300, 20001, 555, operator_id=20002))).event
    friend = (await shape(private_recall(BOT, 20001, 556))).event
    assert (group.kind, group.channel_id, group.message_id, group.user.id) == (
        "message.deleted",
        "group:300",
        "555",
        "20002",
    )
    assert (friend.kind, friend.channel_id, friend.message_id) == ("message.deleted", "private:20001", "556")


async def test_frames_that_are_no_events_are_none_and_malformed_ones_say_what_is_wrong():
    s = shaper()
    assert await s.shape({"post_type": "request", "request_type": "friend"}, 1.0) is None
    assert await s.shape({"post_type": "message_sent", "message_type": "private"}, 1.0) is None
    bad = private_message(BOT, 20001, "x")
    with pytest.raises(EventInvalid, match="message_id is missing"):
        await s.shape({**bad, "message_id": "7"}, 1.0)
    with pytest.raises(EventInvalid, match="array of segments or a CQ-code string"):
        await s.shape({**bad, "message": 5}, 1.0)
    with pytest.raises(EventInvalid, match="must be an object with a type"):
        parse_message([{"data": {}}])


async def test_mention_required_follows_the_account_and_the_chat():
    frame = group_message(BOT, 300, 20001, "x")
    assert (await shape(frame, mention_required=False)).event.extra["mentionRequired"] is False
    chats = {"group:300": {"mention_required": False}}
    assert (await shape(frame, chats=chats)).event.extra["mentionRequired"] is False
    assert "mentionRequired" not in (await shape(private_message(BOT, 20001, "x"))).event.extra
