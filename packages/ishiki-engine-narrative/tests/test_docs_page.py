"""docs/engines/narrative.md is executable: its option tables are generated, its fact-log lines are entries."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from ishiki_host import Entry

from ishiki_engine_narrative import ENTRY_TYPE, ROLE_KIND, Narrative, parse_decision
from ishiki_engine_narrative.docs import main, render_page

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "engines" / "narrative.md"
FACTLOG = REPO / "docs" / "factlog.md"


def json_lines(path: Path) -> list[Entry]:
    blocks = re.findall(r"```json\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)
    return [Entry.from_json(line) for block in blocks for line in block.splitlines() if line.startswith('{"id"')]


def test_the_option_tables_are_fresh() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert render_page(text) == text, "stale: run `python -m ishiki_engine_narrative.docs`"
    for key in ("| `max_messages` |", "| `update.model` |", "| `narrator.max_tokens` |", "| `decoder.retries` |"):
        assert key in text


def test_a_stale_table_is_found_and_rewritten(tmp_path: Path) -> None:
    page = tmp_path / "narrative.md"
    page.write_text(PAGE.read_text(encoding="utf-8").replace("| `24` |", "| `25` |"), encoding="utf-8")
    check = [sys.executable, "-m", "ishiki_engine_narrative.docs", "--check", str(page)]
    done = subprocess.run(check, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "the options tables are stale" in done.stderr
    assert main([str(page)]) == 0
    assert page.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="markers"):
        render_page("# no tables\n")


def test_the_documented_records_are_what_the_engines_write_and_read() -> None:
    entries = json_lines(PAGE) + json_lines(FACTLOG)
    stories = [e for e in entries if e.type == ENTRY_TYPE]
    assert len(stories) == 2
    for story in stories:
        assert Narrative.from_entry(story) is not None
        assert isinstance(story.data["upto"], int)
        assert story.turn is None
    roles = [e for e in entries if e.data.get("kind") == ROLE_KIND]
    assert {e.data["role"] for e in roles} == {"narrator", "decoder", "replyer"}
    for record in roles:
        if record.data["role"] == "narrator" and "text" in record.data:
            assert parse_decision(record.data["text"]).to_dict() == record.data["parsed"]
