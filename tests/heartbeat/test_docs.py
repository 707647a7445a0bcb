"""docs/heartbeats.md stays true: its heartbeats.json loads cleanly and its /beats listing is what we print."""

from __future__ import annotations

import re
from pathlib import Path

from ishiki_host.heartbeat import parse_beat_file, render_beats
from ishiki_host.store import Beat, BeatTarget

DOC = Path(__file__).parents[2] / "docs" / "heartbeats.md"
HERE = BeatTarget("alice", "telegram:1", "private:9")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_documented_file_loads_without_errors() -> None:
    (example,) = _blocks("json")
    parsed = parse_beat_file(example, file=str(DOC), default_tz="UTC", now=1_717_200_000.0)
    assert parsed.errors == ()
    assert [spec.id for spec in parsed.specs] == ["standup", "passport", "__clear_images__"]


def test_the_documented_listing_is_rendered_output() -> None:
    (listing,) = _blocks("text")
    mine = Beat("b-3f9a1c", "stretch, your back hurts", "reminder", "0 9 * * 1-5", None, HERE, True, False,
                "alice/telegram:1/private:9", None, 1_717_398_000.0, 0.0, 0.0)  # fmt: skip
    ops = Beat("standup", "Ask everyone for their one-line standup update and collect the answers.", "task",
               "0 10 * * 1-5", "Europe/Berlin", HERE, True, True, None, None, 1_717_401_600.0, 0.0, 0.0)  # fmt: skip
    assert render_beats([ops, mine], "Europe/Berlin") == listing.strip()
