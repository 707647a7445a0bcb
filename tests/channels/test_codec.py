"""What crosses between a supervisor and its workers comes back as it went, through real JSON; what does not
decode is a ``FrameError`` naming what was wrong."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ishiki_host.channels.base import Draft, InboundAttachment, OutboundFile, SendResult, TurnActivity
from ishiki_host.channels.codec import (
    activity_from,
    activity_json,
    attachment_from,
    attachment_json,
    bytes_from,
    draft_from,
    draft_json,
    event_from,
    file_from,
    file_json,
    result_from,
    result_json,
)
from ishiki_host.channels.events import IshikiEvent, Quote, User
from ishiki_host.resources import Blob
from ishiki_host.workers.wire import FrameError


def through_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def test_an_event_with_everything_comes_back_equal() -> None:
    event = IshikiEvent(
        kind="message.created",
        platform="telegram",
        self_id="42",
        channel_id="group:-100",
        message_id="7",
        timestamp=1_700_000_000.5,
        user=User(id="9", name="Ana"),
        content="hello ✓",
        quote=Quote(message_id="6", text="before", user=User(id="1"), from_self=True),
        mentions_self=True,
        extra={"thread": 3},
    )
    assert event_from(through_json(event.to_dict())) == event


def test_attachments_files_results_drafts_and_activities_come_back_equal() -> None:
    attachment = InboundAttachment("image/png", name="a.png", size=3, data=b"\x00\xff\x10")
    lazy = InboundAttachment("audio/ogg", fetcher="telegram", locator={"file_id": "abc"})
    file = OutboundFile(Blob(b"%PDF", "application/pdf", "doc.pdf"), caption="the doc", extra={"k": "v"})
    result = SendResult(("1", "2"), error="part 3 failed")
    draft = Draft("d1", "half a reply", reply_to="7")
    activity = TurnActivity("tool", 12.5, model="default", tool="read", step=2)
    assert attachment_from(through_json(attachment_json(attachment))) == attachment
    assert attachment_from(through_json(attachment_json(lazy))) == lazy
    assert file_from(through_json(file_json(file))) == file
    assert result_from(through_json(result_json(result))) == result
    assert draft_from(through_json(draft_json(draft))) == draft
    assert activity_from(through_json(activity_json(activity))) == activity


@pytest.mark.parametrize(
    ("decode", "value", "names"),
    [
        (event_from, ["not", "an", "object"], "event"),
        (event_from, {"kind": "message"}, "platform"),
        (attachment_from, {"media_type": 3}, "media_type"),
        (attachment_from, {"media_type": "image/png", "data": "%%%"}, "base64"),
        (result_from, {"ids": [1, 2]}, "ids"),
        (draft_from, {"id": "d", "text": None}, "draft text"),
        (activity_from, {"state": "dreaming", "started_at": 1}, "dreaming"),
        (activity_from, {"state": "tool", "started_at": True}, "started_at"),
        (file_from, {"data": "AA==", "media_type": "x/y", "extra": {"k": 1}}, "extra"),
        (bytes_from, 12, "base64"),
    ],
)
def test_what_does_not_decode_is_a_frame_error_naming_it(decode: Any, value: Any, names: str) -> None:
    with pytest.raises(FrameError, match=names):
        decode(value)
