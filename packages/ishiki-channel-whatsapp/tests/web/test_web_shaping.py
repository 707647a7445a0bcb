"""Shaping: chats and people as the host names them, the group mention filter, quotes, edits, deletions, media,
what is not input, and what this channel does not read."""

from __future__ import annotations

import pytest

from ishiki_channel_whatsapp.web import wire
from ishiki_channel_whatsapp.web.config import WebSettings
from ishiki_channel_whatsapp.web.shaping import Shaper
from ishiki_channel_whatsapp.web.testing import document, edit, image, message_event, revoke, text

ME = wire.Identity("491511234567", lid="987654321012345", name="Ishiki")
ALICE = "491700000001@s.whatsapp.net"
GROUP = "120363000000000001@g.us"


def _shaper(**web) -> Shaper:
    return Shaper(ME, WebSettings.from_config({"backend": "web", "web": web}), fetcher="whatsapp:491511234567")


def _shape(content, *, shaper=None, name=None, **keys):
    message = wire.read_message(message_event(content, chat=keys.pop("chat", ALICE), **keys))
    shaper = shaper or _shaper()
    assert shaper.drop_reason(message) is None
    return shaper.shape(message, name=name)


def _reason(content, *, shaper=None, **keys):
    return (shaper or _shaper()).drop_reason(wire.read_message(message_event(content, **keys)))


def test_a_direct_message():
    shaped = _shape(text("hello"), push_name="Alice", message_id="3A77")
    event = shaped.event
    assert (event.sid, event.channel_id, event.message_id, event.content) == (
        "whatsapp:491511234567",
        "private:491700000001",
        "3A77",
        "hello",
    )
    assert (event.user.id, event.user.name, event.timestamp, event.mentions_self) == (
        "491700000001",
        "Alice",
        1_700_000_000.0,
        False,
    )
    assert event.is_direct
    assert event.extra == {"chatType": "private", "messageType": "conversation"}


def test_the_address_book_names_a_sender_without_a_push_name():
    assert _shape(text("hi"), push_name="", name="Alice (work)").event.user.name == "Alice (work)"
    assert _shape(text("hi"), push_name="", name=None).event.user.name is None


def test_a_direct_chat_known_only_by_lid():
    event = _shape(text("hi"), chat="123456789012345@lid").event
    assert (event.channel_id, event.user.id) == ("private:123456789012345@lid", "123456789012345@lid")


def test_a_direct_chat_by_lid_with_the_number_told():
    event = _shape(text("hi"), chat="123456789012345@lid", sender_alt=ALICE).event
    assert (event.channel_id, event.user.id) == ("private:491700000001", "491700000001")


def test_an_unmentioned_group_message_is_input_but_not_addressed():
    event = _shape(text("lunch?"), chat=GROUP, sender="123456789012345@lid", sender_alt=ALICE).event
    assert (event.channel_id, event.user.id, event.mentions_self) == (f"group:{GROUP}", "491700000001", False)
    assert event.extra["mentionRequired"] is True
    assert event.extra["chatType"] == "group"


@pytest.mark.parametrize("mention", ["491511234567@s.whatsapp.net", "987654321012345@lid"])
def test_a_mention_by_number_or_lid_addresses_the_account(mention):
    event = _shape(text("@Ishiki what's up", mentions=[mention]), chat=GROUP, sender=ALICE).event
    assert event.mentions_self


def test_mentioning_someone_else_does_not():
    event = _shape(text("@Bob hi", mentions=["491700000009@s.whatsapp.net"]), chat=GROUP, sender=ALICE).event
    assert not event.mentions_self


@pytest.mark.parametrize("quoted_sender", ["491511234567:4@s.whatsapp.net", "987654321012345@lid"])
def test_a_reply_to_the_account_addresses_it(quoted_sender):
    event = _shape(text("thanks", quote=("3EB0AA", quoted_sender, "here you go")), chat=GROUP, sender=ALICE).event
    assert event.mentions_self
    assert event.quote is not None
    assert (event.quote.message_id, event.quote.text, event.quote.from_self) == ("3EB0AA", "here you go", True)


def test_a_reply_to_someone_else_is_a_quote_only():
    event = _shape(text("same", quote=("3A55", "491700000009@s.whatsapp.net", "pizza")), chat=GROUP, sender=ALICE).event
    assert not event.mentions_self
    assert event.quote is not None
    assert event.quote.user is not None
    assert event.quote.user.id == "491700000009"


def test_a_group_that_needs_no_mention_says_so():
    shaper = _shaper(chats={f"group:{GROUP}": {"mention_required": False}})
    assert _shape(text("hi"), shaper=shaper, chat=GROUP, sender=ALICE).event.extra["mentionRequired"] is False


def test_an_edit_is_the_edited_message_again():
    event = _shape(edit("3A01", "at 1pm"), message_id="3A02", timestamp_ms=1_700_000_060_000).event
    assert (event.kind, event.message_id, event.content, event.extra["editedAt"]) == (
        "message.created",
        "3A01",
        "at 1pm",
        1_700_000_060.0,
    )


def test_a_message_deleted_for_everyone():
    event = _shape(revoke("3A01"), message_id="3A03").event
    assert (event.kind, event.message_id, event.channel_id) == ("message.deleted", "3A01", "private:491700000001")


def test_media_is_a_lazy_attachment():
    shaped = _shape(image(caption="our whiteboard", size=2048))
    assert shaped.event.content == "our whiteboard"
    assert shaped.event.extra["mediaKind"] == "image"
    (attachment,) = shaped.attachments
    assert (attachment.media_type, attachment.name, attachment.size, attachment.fetcher) == (
        "image/jpeg",
        "image.jpg",
        2048,
        "whatsapp:491511234567",
    )
    assert attachment.data is None
    assert attachment.locator["directPath"] == "/v/t62.7118-24/image"


def test_a_file_over_the_limit_is_told_not_attached():
    shaper = Shaper(ME, WebSettings.from_config({"backend": "web", "max_download_bytes": 1000}), fetcher="f")
    shaped = _shape(document(name="big.pdf", size=5 * 1024 * 1024), shaper=shaper)
    assert shaped.attachments == ()
    assert shaped.event.content == "[document 'big.pdf' (5.0 MiB) was not downloaded: it is over the 1000 bytes limit]"
    assert shaped.event.extra["refusedFiles"] == [
        {"kind": "document", "name": "big.pdf", "size": 5242880, "reason": "too_large"}
    ]


def test_an_unsupported_kind_is_recorded_as_such():
    from neonize.proto.waE2E import WAWebProtobufsE2E_pb2 as e2e

    event = _shape(e2e.Message(eventMessage=e2e.EventMessage(name="Party"))).event
    assert event.content == "[eventMessage: a kind of WhatsApp message this channel does not read]"
    assert event.extra["unsupported"] == "eventMessage"


def test_the_owners_own_messages_are_not_input():
    assert _reason(text("hi Alice"), chat=ALICE, sender="491511234567:0@s.whatsapp.net", from_me=True) == (
        "written by the account itself"
    )


def test_the_owners_self_chat_is_input():
    shaped = _shape(text("remind me at 5"), chat="491511234567@s.whatsapp.net", from_me=True)
    assert (shaped.event.channel_id, shaped.event.user.id, shaped.event.extra["selfChat"]) == (
        "private:491511234567",
        "491511234567",
        True,
    )
    shaper = _shaper(self_chat=False)
    assert _reason(text("x"), shaper=shaper, chat="491511234567@s.whatsapp.net", from_me=True) is not None


def test_status_updates_and_reactions_are_not_input():
    from neonize.proto.waCommon.WACommon_pb2 import MessageKey
    from neonize.proto.waE2E import WAWebProtobufsE2E_pb2 as e2e

    assert "status updates" in _reason(text("story"), chat="status@broadcast", sender=ALICE)
    assert "status updates" in _reason(text("news"), chat="120363999@newsletter", sender=ALICE)
    reaction = e2e.Message(reactionMessage=e2e.ReactionMessage(key=MessageKey(ID="M1"), text="👍"))
    assert _reason(reaction, chat=ALICE) == "a reaction"
    assert "protocol" in _reason(e2e.Message(), chat=ALICE)
