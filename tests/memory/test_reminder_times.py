"""What a condense call says of a reminder's time: kept as written, read strictly, never a crash."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from ishiki_host.memory.reminders import parse_when
from ishiki_host.sessions.summarizer import Condensed, parse_condensed, parse_memory_reply

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize(
    ("when", "kept"),
    [
        ('"2026-12-04T18:00"', "2026-12-04T18:00"),
        ('"  2026-12-04 18:00 "', "2026-12-04 18:00"),
        ("null", None),
        ('""', None),
        ("1764867600", "1764867600"),  # not a string: kept as its JSON text, which parse_when refuses
        ('{"day": "friday"}', '{"day": "friday"}'),
    ],
)
def test_a_reminders_when_is_kept_as_written(when: str, kept: str | None) -> None:
    reply = f'{{"type": "reminder", "content": "Remind Ana to call her mother.", "when": {when}}}'
    assert parse_condensed(reply) == Condensed("reminder", "Remind Ana to call her mother.", when=kept)


def test_when_belongs_to_reminders_only_and_other_keys_still_make_a_summary() -> None:
    assert parse_condensed('{"type": "fact", "content": "Ana likes tea.", "when": "2026-12-04T18:00"}') == Condensed(
        "fact", "Ana likes tea."
    )
    assert parse_condensed('{"type": "reminder", "content": "Call mum."}') == Condensed("reminder", "Call mum.")
    odd = '{"type": "reminder", "content": "Call mum.", "at": "18:00"}'
    assert parse_condensed(odd) == Condensed("summary", odd)
    assert parse_memory_reply('{"type": "reminder", "content": "Call mum.", "when": null}') == ("reminder", "Call mum.")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-04T18:00", datetime(2026, 12, 4, 18, 0, tzinfo=BERLIN)),
        ("2026-12-04 18:00:30", datetime(2026, 12, 4, 18, 0, 30, tzinfo=BERLIN)),
        ("2026-12-04T17:00Z", datetime(2026, 12, 4, 18, 0, tzinfo=BERLIN)),
        ("2026-12-04T12:00-05:00", datetime(2026, 12, 4, 18, 0, tzinfo=BERLIN)),
    ],
)
def test_a_local_date_time_is_read_in_the_hosts_zone(text: str, expected: datetime) -> None:
    assert parse_when(text, "Europe/Berlin") == expected


@pytest.mark.parametrize(
    "text", ["Friday 18:00", "2026-12-04", "18:00", "2026-13-04T18:00", "2026-12-04T25:00", "1764867600", ""]
)
def test_anything_else_is_refused_with_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"date and time|month|hour|out of range"):
        parse_when(text, "Europe/Berlin")
