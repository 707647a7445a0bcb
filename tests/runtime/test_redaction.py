"""``hide_above`` on entries as older hosts wrote them and as this one stamps them (``core.levels``)."""

from __future__ import annotations

from typing import Any

from ishiki_host.addresses.ids import Target
from ishiki_host.core.entries import Entry
from ishiki_host.core.levels import content_level, summary_readers
from ishiki_host.runtime.redaction import hide_above


def entry(number: int, kind: str = "message", **data: Any) -> Entry:
    return Entry(number, kind, 0.0, data, 1)


RESULT = {"role": "tool", "parts": [{"type": "text", "text": "secret"}], "tool_call_id": "c1", "tool_name": "diary"}


def text_of(found: Entry) -> str:
    return "".join(p["text"] for p in found.data["parts"])


def test_a_result_written_before_levels_were_stamped_counts_as_trusted() -> None:
    legacy = entry(1, **RESULT)
    assert content_level(legacy) is None
    [shown] = hide_above([legacy], "trusted", None)
    [hidden] = hide_above([legacy], "untrusted", None)
    assert text_of(shown) == "secret"
    assert text_of(hidden) == "[hidden: the result of diary in a turn at trusted level]"
    assert hidden.data["tool_call_id"] == "c1"  # still paired with its call


def test_an_owner_turn_leaves_its_call_names_but_not_its_arguments_or_reasoning() -> None:
    call = {"id": "c1", "name": "diary", "arguments": {"page": "secret"}}
    send = {
        "id": "c2",
        "name": "send_message",
        "arguments": {"messages": ["hi"], "target": {"sid": "s:1", "channelId": "g"}},
    }
    thought = entry(
        1, role="assistant", parts=[{"type": "text", "text": "secret plan"}], tool_calls=[call, send], trust="owner"
    )
    [cross] = hide_above([thought], "trusted", {Target("s:1", "g")})
    calls = cross.data["tool_calls"]
    assert [c["name"] for c in calls] == ["diary", "send_message"]
    assert "secret" not in str(cross.data)
    assert calls[1]["arguments"] == send["arguments"]  # sent into this turn's chat: its people saw it
    [elsewhere] = hide_above([thought], "trusted", {Target("s:1", "other")})
    assert "hidden" in str(elsewhere.data["tool_calls"][1]["arguments"])


def test_a_summarys_readers_are_the_highest_level_it_covers_and_unknown_counts_as_owner() -> None:
    said = entry(1, role="user", parts=[], source={"platform": "fake"}, trust="untrusted")
    answered = entry(2, role="assistant", parts=[], trust="trusted")
    assert summary_readers([said, answered]) == "trusted"
    assert summary_readers([said, entry(3, role="assistant", parts=[])]) == "owner"
    assert summary_readers([entry(4, "session", reason="clear"), said]) == "untrusted"  # a clear carries nothing
    assert summary_readers([]) == "owner"
