"""The default window and projection: session boundaries, compaction, unpaired tool messages."""

from __future__ import annotations

from typing import Any

from ishiki_host.core.entries import Entry
from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.window import SUMMARY_HEADER, project_entries, select_session_window


def entries(*specs: tuple[str, dict[str, Any]]) -> list[Entry]:
    return [Entry(index, kind, 1.0, data) for index, (kind, data) in enumerate(specs, start=1)]


def msg(text: str) -> tuple[str, dict[str, Any]]:
    return ("message", Message.user(text).to_dict())


def select(log: list[Entry]) -> list[int]:
    return [e.id for e in select_session_window(reversed(log))]


def test_the_window_is_everything_without_boundaries() -> None:
    assert select(entries(msg("a"), ("event", {"name": "turn.start"}), msg("b"))) == [1, 2, 3]


def test_the_window_starts_at_the_newest_session_entry() -> None:
    log = entries(msg("a"), ("session", {"reason": "clear"}), msg("b"), ("session", {"reason": "clear"}), msg("c"))
    assert select(log) == [4, 5]


def test_the_newest_compact_entry_stands_for_what_it_covers() -> None:
    log = entries(
        msg("1"),
        msg("2"),
        ("compact", {"upto": 1, "summary": "old"}),
        msg("4"),
        ("compact", {"upto": 2, "summary": "newer"}),
        msg("6"),
    )
    assert select(log) == [4, 5, 6]  # 3 is superseded, 1 and 2 are covered


def test_reading_stops_as_soon_as_the_window_is_known() -> None:
    log = entries(msg("1"), msg("2"), ("compact", {"upto": 2, "summary": "s"}), msg("4"))
    consumed: list[int] = []

    def newest_first():  # type: ignore[no-untyped-def]
        for entry in reversed(log):
            consumed.append(entry.id)
            yield entry

    assert [e.id for e in select_session_window(newest_first())] == [3, 4]
    assert consumed == [4, 3, 2]


def test_projection_keeps_messages_and_summaries_only() -> None:
    log = entries(
        ("session", {"reason": "compact", "summary": "we met"}),
        ("event", {"name": "turn.start"}),
        msg("hello"),
        ("message", {"role": "custom", "kind": "note"}),
        ("message", {"parts": "broken"}),
        ("custom", {"kind": "x"}),
    )
    assert project_entries(log) == [Message.user(f"{SUMMARY_HEADER}\nwe met"), Message.user("hello")]


def test_projection_drops_tool_messages_that_lost_their_pair() -> None:
    call_a, call_b = ToolCall("a", "act"), ToolCall("b", "act")
    log = entries(
        ("message", Message.tool(ToolCall("gone", "act"), "orphan result").to_dict()),
        ("message", Message.assistant("", [call_a, call_b]).to_dict()),
        ("message", Message.tool(call_a, "ok").to_dict()),
        ("message", Message.assistant("", [ToolCall("c", "act")]).to_dict()),
    )
    assert project_entries(log) == [Message.assistant("", [call_a]), Message.tool(call_a, "ok")]
