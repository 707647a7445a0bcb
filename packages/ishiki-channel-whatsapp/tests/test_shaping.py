"""Cloud API messages shaped into the host's events; notifications read without trusting their shape."""

from __future__ import annotations

import pytest
from ishiki_host.errors import EventInvalid

from ishiki_channel_whatsapp.cloud.payload import Change, NotificationInvalid, read_notification
from ishiki_channel_whatsapp.cloud.shaping import Shaper
from ishiki_channel_whatsapp.testing import (
    DEFAULT_DISPLAY_PHONE_NUMBER,
    DEFAULT_PHONE_NUMBER_ID,
    contact,
    media_message,
    message,
    notification,
    text_message,
)

ALICE = "4915112345678"
SID = f"whatsapp:{DEFAULT_PHONE_NUMBER_ID}"
CHANGE = Change(DEFAULT_PHONE_NUMBER_ID, DEFAULT_DISPLAY_PHONE_NUMBER, {ALICE: "Alice"})


def shape(item, *, own=lambda wamid: False):
    return Shaper(DEFAULT_PHONE_NUMBER_ID, fetcher=SID, own=own).shape(item, CHANGE)


def test_a_text_message_is_a_private_event_from_its_wa_id_named_by_its_profile():
    shaped = shape(text_message(ALICE, "hello", message_id="wamid.A1", timestamp=1_700_000_123))
    event = shaped.event
    assert (event.kind, event.sid, event.channel_id) == ("message.created", SID, f"private:{ALICE}")
    assert (event.message_id, event.timestamp, event.content) == ("wamid.A1", 1_700_000_123.0, "hello")
    assert (event.user.id, event.user.name) == (ALICE, "Alice")
    assert event.quote is None
    assert not event.mentions_self
    assert dict(event.extra) == {"type": "text"}
    assert shaped.attachments == ()


def test_a_sender_without_a_profile_has_no_name():
    assert shape(text_message("4930000000", "hi")).event.user.name is None


def test_a_reply_to_the_business_quotes_it_and_addresses_it():
    event = shape(text_message(ALICE, "yes", reply_to="wamid.OURS", reply_from="+1 555-010-0000")).event
    assert (event.quote.message_id, event.quote.from_self, event.mentions_self) == ("wamid.OURS", True, True)


def test_a_reply_to_someone_else_is_a_quote_not_addressed():
    event = shape(text_message(ALICE, "yes", reply_to="wamid.THEIRS", reply_from="4930000000")).event
    assert (event.quote.message_id, event.quote.from_self, event.mentions_self) == ("wamid.THEIRS", False, False)


def test_a_reply_to_a_message_we_sent_is_from_self_by_its_id():
    item = text_message(ALICE, "yes", reply_to="wamid.SENT", reply_from="")
    assert shape(item, own=lambda wamid: wamid == "wamid.SENT").event.quote.from_self


def test_an_image_is_a_lazy_attachment_whose_locator_holds_only_the_media_id():
    shaped = shape(media_message(ALICE, "image", "9001", mime_type="image/jpeg", caption="my tea"))
    assert shaped.event.content == "my tea"
    (attachment,) = shaped.attachments
    assert (attachment.media_type, attachment.name, attachment.fetcher) == ("image/jpeg", "image.jpg", SID)
    assert dict(attachment.locator) == {"media_id": "9001"}
    assert attachment.data is None


def test_a_document_keeps_its_file_name_and_a_voice_note_its_bare_media_type():
    document = shape(media_message(ALICE, "document", "9002", mime_type="application/pdf", filename="menu.pdf"))
    assert (document.attachments[0].name, document.attachments[0].media_type, document.event.content) == (
        "menu.pdf",
        "application/pdf",
        "",
    )
    voice = shape(media_message(ALICE, "audio", "9003", mime_type="audio/ogg; codecs=opus"))
    assert voice.attachments[0].media_type == "audio/ogg"


def test_a_sticker_says_so_and_is_attached():
    shaped = shape(media_message(ALICE, "sticker", "9004", mime_type="image/webp"))
    assert shaped.event.content == "[sticker]"
    assert shaped.event.extra["sticker"]["id"] == "9004"
    assert len(shaped.attachments) == 1


@pytest.mark.parametrize(
    ("kind", "body", "extra", "content"),
    [
        (
            "location",
            {"latitude": 52.5, "longitude": 13.4, "name": "Tea house", "address": "Main St 1"},
            {},
            "[location: Tea house, Main St 1 (52.5, 13.4)]",
        ),
        ("location", {"latitude": 52.5, "longitude": 13.4}, {}, "[location: (52.5, 13.4)]"),
        ("reaction", {"message_id": "wamid.OURS", "emoji": "👍"}, {}, "[reaction 👍]"),
        ("reaction", {"message_id": "wamid.OURS"}, {}, "[reaction removed]"),
        (
            "contacts",
            [{"name": {"formatted_name": "Bob Smith"}, "phones": [{"phone": "+49 30 1"}]}],
            {},
            "[contacts: Bob Smith]",
        ),
        (
            "interactive",
            {"type": "button_reply", "button_reply": {"id": "yes", "title": "Yes please"}},
            {},
            "[button_reply] Yes please",
        ),
        (
            "interactive",
            {"type": "list_reply", "list_reply": {"id": "g", "title": "Green tea"}},
            {},
            "[list_reply] Green tea",
        ),
        ("button", {"text": "Stop promotions", "payload": "STOP"}, {}, "[button] Stop promotions"),
        (
            "unsupported",
            None,
            {"errors": [{"code": 131051, "title": "Message type unknown"}]},
            "[unsupported: Message type unknown]",
        ),
        ("order", {"catalog_id": "1", "product_items": []}, {}, "[order]"),
        ("system", {"body": "Alice changed her number", "type": "user_changed_number"}, {}, "[system]"),
        ("request_welcome", None, {}, "[request_welcome]"),
        ("ephemeral", {"x": 1}, {}, "[ephemeral]"),
    ],
)
def test_a_message_of_another_type_is_recorded_as_what_it_is(kind, body, extra, content):
    shaped = shape(message(ALICE, kind, body, **extra))
    event = shaped.event
    assert event.content == content
    assert event.extra["type"] == kind
    if body is not None:
        assert event.extra[kind] == body


def test_a_reaction_quotes_the_message_it_reacts_to():
    event = shape(
        message(ALICE, "reaction", {"message_id": "wamid.SENT", "emoji": "❤"}), own={"wamid.SENT"}.__contains__
    ).event
    assert (event.quote.message_id, event.quote.from_self) == ("wamid.SENT", True)


def test_a_message_without_a_type_is_unknown():
    item = text_message(ALICE, "x")
    del item["type"]
    assert shape(item).event.content == "[unknown]"


def test_a_message_with_a_group_id_is_in_that_group():
    event = shape(text_message(ALICE, "hi all", group_id="120363025246125486")).event
    assert event.channel_id == "group:120363025246125486"
    assert event.extra["groupId"] == "120363025246125486"
    assert event.user.id == ALICE


def test_a_forwarded_message_says_so():
    item = text_message(ALICE, "look")
    item["context"] = {"forwarded": True}
    event = shape(item).event
    assert event.extra["forwarded"] is True
    assert event.quote is None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"id": None}, "message.id"),
        ({"id": ""}, "message.id"),
        ({"from": 4915112345678}, "message.from"),
        ({"timestamp": "yesterday"}, "message.timestamp"),
        ({"timestamp": "nan"}, "timestamp"),
    ],
)
def test_a_malformed_message_is_invalid_never_a_crash(change, words):
    item = {**text_message(ALICE, "x"), **change}
    with pytest.raises(EventInvalid, match=words):
        shape(item)


def test_a_message_that_is_not_an_object_is_invalid():
    with pytest.raises(EventInvalid, match="not an object"):
        shape(["not", "a", "message"])


# -- notifications ----------------------------------------------------------------------------------------------


def test_a_notification_is_read_into_its_changes():
    data = notification(messages=[text_message(ALICE, "hi")], contacts=[contact(ALICE, "Alice")])
    (change,) = read_notification(data).changes
    assert (change.phone_number_id, change.display_phone_number) == (
        DEFAULT_PHONE_NUMBER_ID,
        DEFAULT_DISPLAY_PHONE_NUMBER,
    )
    assert change.names == {ALICE: "Alice"}
    assert len(change.messages) == 1
    assert change.statuses == ()
    assert change.errors == ()


def test_other_objects_and_fields_are_not_changes():
    assert read_notification({"object": "page", "entry": []}).changes == ()
    other = read_notification(notification(field="message_template_status_update"))
    assert (other.changes, other.ignored) == ((), ("message_template_status_update",))


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ([1, 2], "not an object"),
        ({"object": "whatsapp_business_account"}, "entry is not an array"),
        ({"object": "whatsapp_business_account", "entry": [7]}, r"entry\[0\] is not an object"),
        ({"object": "whatsapp_business_account", "entry": [{"changes": {}}]}, r"entry\[0\].changes is not an array"),
        (
            {"object": "whatsapp_business_account", "entry": [{"changes": [{"field": "messages", "value": []}]}]},
            r"changes\[0\].value is not an object",
        ),
        (
            {
                "object": "whatsapp_business_account",
                "entry": [{"changes": [{"field": "messages", "value": {"messages": "hi"}}]}],
            },
            "messages is not an array",
        ),
    ],
)
def test_a_notification_of_another_shape_names_the_part(data, words):
    with pytest.raises(NotificationInvalid, match=words):
        read_notification(data)
