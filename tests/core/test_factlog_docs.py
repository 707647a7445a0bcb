"""docs/factlog.md is executable: every example line is an entry, and every entry type is shown."""

from __future__ import annotations

import re
from pathlib import Path

from ishiki_host.core.entries import Entry
from ishiki_host.core.messages import Message
from ishiki_host.core.window import project_entries, select_session_window

DOC = Path(__file__).parents[2] / "docs" / "factlog.md"


def examples() -> list[Entry]:
    blocks = re.findall(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    return [Entry.from_json(line) for block in blocks for line in block.splitlines() if line.strip()]


def test_every_example_is_a_valid_entry_in_the_documented_shape() -> None:
    entries = examples()
    assert {e.type for e in entries} == {
        "message", "event", "usage", "session", "compact", "catalog", "narrative", "custom",
    }  # fmt: skip
    for entry in entries:
        assert entry.to_json() == Entry.from_json(entry.to_json()).to_json()
        if entry.type == "message":
            assert Message.from_dict(entry.data).role in ("user", "assistant", "tool")
        if entry.type == "event":
            assert entry.turn is not None


def test_documented_turn_events_and_reasons_are_the_ones_the_agent_writes() -> None:
    names = {e.name for e in examples() if e.type == "event"}
    assert names == {"turn.start", "turn.done", "turn.failed", "turn.aborted"}
    text = DOC.read_text(encoding="utf-8")
    for reason in ("finish", "sent", "no_tool_calls", "max_steps", "stop_hook"):
        assert f"`{reason}`" in text


def test_the_examples_project_to_a_window() -> None:
    window = select_session_window(reversed(examples()))
    assert window[0].type == "compact"
    assert project_entries(window)[0].text.startswith("Summary of the conversation so far:")
