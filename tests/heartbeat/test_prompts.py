"""Wake prompts: a reminder reminds (what and why), a task is done and summarized; lateness is told."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ishiki_host.heartbeat import prompt_for
from ishiki_host.store import Beat, BeatTarget

Wall = Callable[[str, str], float]
TARGET = BeatTarget("alice", "telegram:1", "private:9")


def _beat(kind: str, target: BeatTarget | None, *, recurring: bool = True, tz: str | None = None) -> Beat:
    text = "Renew the passport: it expires in May" if kind == "reminder" else "Check the build and list failures"
    return Beat("b-1", text, kind, "0 9 * * 1", tz, target, recurring, False, None, None, None, 0.0, 0.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "target", "must", "must_not"),
    [
        ("reminder", TARGET, ["Remind them now, in this chat", "why it matters", "do not invent"], ["run history"]),
        ("reminder", None, ["stored in the beat's run history", "Reply with the reminder itself"], ["this chat"]),
        ("task", TARGET, ["Do it now", "post one short summary in this chat", "what stopped it"], ["run history"]),
        ("task", None, ["Do it now", "stored in the beat's run history", "End with a short summary"], ["this chat"]),
    ],
)
def test_prompt_by_type_and_target(
    kind: str, target: BeatTarget | None, must: list[str], must_not: list[str], wall: Wall
) -> None:
    now = wall("2024-06-03 09:00", "Europe/Berlin")
    prompt = prompt_for(_beat(kind, target), default_tz="Europe/Berlin", now=now, scheduled_for=now)
    assert prompt.startswith(f"[Scheduled {kind} 'b-1', due Mon 2024-06-03 09:00 CEST; it repeats on cron '0 9 * * 1'")
    assert "not a message from anyone" in prompt
    assert f"> {_beat(kind, target).text}" in prompt
    assert all(part in prompt for part in must), prompt
    assert not any(part in prompt for part in must_not), prompt
    assert "late" not in prompt


def test_a_late_run_says_so_and_one_time_beats_say_once(wall: Wall) -> None:
    slot = wall("2024-06-03 09:00", "UTC")
    prompt = prompt_for(_beat("task", TARGET, recurring=False, tz="UTC"), default_tz="Asia/Tokyo", now=slot + 240,
                        scheduled_for=slot)  # fmt: skip
    assert "it runs once" in prompt
    assert "It is now Mon 2024-06-03 09:04 UTC, 4 minutes late" in prompt
    hours = prompt_for(_beat("task", TARGET, tz="UTC"), default_tz="UTC", now=slot + 3 * 3600, scheduled_for=slot)
    assert "3 hours late" in hours
