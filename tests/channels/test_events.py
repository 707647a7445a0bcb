"""IshikiEvent: validation with clear errors, and the JSON round trip stored in the fact log."""

from __future__ import annotations

import json
import math

import pytest

from ishiki_host.channels.events import (
    Attachment,
    IshikiEvent,
    Quote,
    User,
    channel_id,
    parse_channel_id,
    parse_sid,
)
from ishiki_host.errors import ChannelError, EventInvalid


def _event(**changes: object) -> IshikiEvent:
    fields: dict[str, object] = {
        "kind": "message.created",
        "platform": "telegram",
        "self_id": "42",
        "channel_id": "group:-100123",
        "message_id": "7",
        "timestamp": 1_700_000_000.5,
        "user": User("9", "Ann"),
        "content": "hi @bot 😀",
    }
    fields.update(changes)
    return IshikiEvent(**fields)  # type: ignore[arg-type]


def test_full_event_round_trips_through_json() -> None:
    event = _event(
        quote=Quote("6", "earlier", User("42", "bot"), from_self=True),
        mentions_self=True,
        attachments=(Attachment("asset://0123456789abcdef0123456789abcdef.jpg", "image/jpeg", "a.jpg", 1234),),
        extra={"update_id": 5, "thread": None},
    )
    stored = json.loads(json.dumps(event.to_dict()))
    assert IshikiEvent.from_dict(stored) == event
    assert stored["selfId"] == "42"
    assert stored["channelId"] == "group:-100123"
    assert stored["isDirect"] is False
    assert stored["quote"] == {
        "messageId": "6",
        "text": "earlier",
        "fromSelf": True,
        "user": {"id": "42", "name": "bot"},
    }
    assert stored["attachments"][0]["mediaType"] == "image/jpeg"


def test_minimal_event_round_trips_and_omits_empty_parts() -> None:
    event = _event(kind="message.deleted", user=None, content="")
    stored = event.to_dict()
    assert "user" not in stored
    assert "quote" not in stored
    assert "attachments" not in stored
    assert IshikiEvent.from_dict(stored) == event


def test_sid_kind_and_directness_follow_the_ids() -> None:
    event = _event(channel_id="private:9", self_id="a:b")
    assert event.sid == "telegram:a:b"
    assert parse_sid(event.sid) == ("telegram", "a:b")
    assert event.channel_kind == "private"
    assert event.is_direct is True
    assert _event().is_direct is False


@pytest.mark.parametrize("bad", ["9", "private:", "group", "dm:9", "Private:9", "", ":9"])
def test_bad_channel_ids_are_refused_with_the_expected_forms(bad: str) -> None:
    with pytest.raises(EventInvalid, match=r"'private:<id>' or 'group:<id>'"):
        _event(channel_id=bad)


def test_channel_id_helpers() -> None:
    assert channel_id("group", -100) == "group:-100"
    assert parse_channel_id("group:a:b/c") == ("group", "a:b/c")
    with pytest.raises(EventInvalid):
        channel_id("group", "")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"kind": "message.edited"}, "kind"),
        ({"platform": "tele:gram"}, "platform"),
        ({"platform": "tele gram"}, "platform"),
        ({"platform": ""}, "platform"),
        ({"self_id": ""}, "self_id"),
        ({"message_id": ""}, "message_id"),
        ({"timestamp": math.nan}, "timestamp"),
        ({"timestamp": "now"}, "timestamp"),
        ({"timestamp": True}, "timestamp"),
        ({"user": None}, "user is required"),
        ({"content": None}, "content"),
    ],
)
def test_each_broken_field_is_named(changes: dict[str, object], message: str) -> None:
    with pytest.raises(EventInvalid, match=message):
        _event(**changes)


def test_event_errors_are_channel_errors_and_value_errors() -> None:
    with pytest.raises(ChannelError):
        _event(channel_id="x")
    with pytest.raises(ValueError, match="channel id"):
        _event(channel_id="x")


def test_parts_validate_themselves() -> None:
    with pytest.raises(EventInvalid, match=r"User\.id"):
        User("")
    with pytest.raises(EventInvalid, match=r"Attachment\.url.*invalid_resource_uri"):
        Attachment("not a url")
    with pytest.raises(EventInvalid, match=r"Attachment\.size"):
        Attachment("asset://abc", size=-1)
    with pytest.raises(EventInvalid, match=r"Quote\.message_id"):
        Quote("")


def test_stored_events_that_lack_keys_or_are_malformed_say_so() -> None:
    stored = _event().to_dict()
    del stored["channelId"]
    with pytest.raises(EventInvalid, match="channelId"):
        IshikiEvent.from_dict(stored)
    stored = _event().to_dict() | {"user": "Ann"}
    with pytest.raises(EventInvalid, match="malformed"):
        IshikiEvent.from_dict(stored)
    stored = _event().to_dict() | {"channelId": "nowhere"}
    with pytest.raises(EventInvalid, match="nowhere"):
        IshikiEvent.from_dict(stored)
