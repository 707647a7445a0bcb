"""Ingest: what a channel hands the host is made storable before it is written, whatever the channel."""

from __future__ import annotations

import json

import anyio
import pytest

from ishiki_host.channels.events import Attachment, IshikiEvent, Quote, User
from ishiki_host.channels.inbound import clean_event, inbound_message
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

HALF = "\ud83d"  # the first half of 😀, as a JavaScript platform sends a message cut in the middle of a pair


def _event(**changes: object) -> IshikiEvent:
    fields: dict[str, object] = {
        "kind": "message.created",
        "platform": "fake",
        "self_id": "bot",
        "channel_id": "private:1",
        "message_id": "7",
        "timestamp": 1_700_000_000.0,
        "user": User("1", "Ann"),
        "content": "hello 😀",
    }
    fields.update(changes)
    return IshikiEvent(**fields)  # type: ignore[arg-type]


def test_every_string_of_the_event_is_made_storable() -> None:
    event = _event(
        user=User("1", f"Ann {HALF}"),
        content=f"look {HALF} here\x00",
        quote=Quote("6", f"earlier {HALF}", User("2", f"Bo{HALF}b")),
        attachments=(Attachment("asset://0123456789abcdef0123456789abcdef.jpg", "image/jpeg", f"a{HALF}.jpg"),),
        extra={"caption": [f"x{HALF}"], f"k{HALF}": 1},
    )
    data = inbound_message(event, "trusted")
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # would raise on a lone surrogate
    source = data["source"]
    assert data["parts"][0]["text"] == source["content"] == "look \ufffd here"
    assert source["user"] == {"id": "1", "name": "Ann \ufffd"}
    assert source["quote"]["text"] == "earlier \ufffd"
    assert source["quote"]["user"]["name"] == "Bo\ufffdb"
    assert source["attachments"][0]["name"] == "a\ufffd.jpg"
    assert source["extra"] == {"caption": ["x\ufffd"], "k\ufffd": 1}


def test_an_event_that_needs_nothing_is_kept_as_it_is() -> None:
    event = _event(quote=Quote("6", "earlier", User("2", "Bob")), extra={"thread": None})
    assert clean_event(event) is event
    assert inbound_message(event, "trusted")["source"] == event.to_dict()


@pytest.mark.anyio
async def test_a_message_with_half_an_emoji_is_taken_and_answered_and_so_is_the_next(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["noted"]}),))
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        channel = th.channel()
        first = await channel.say(f"a cut emoji {HALF}", user_name=f"Ann {HALF}")
        with anyio.fail_after(10):
            await first.settled()
        second = await channel.say("and now?")
        with anyio.fail_after(10):
            await second.settled()
        assert first.entry_id is not None
        assert second.entry_id is not None
        assert channel.texts() == ["noted", "noted"]
    shown = json.dumps(fake_openai.requests[0].json, ensure_ascii=False)
    assert "a cut emoji \ufffd" in shown
