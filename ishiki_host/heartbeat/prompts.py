"""The prompt a beat wakes its persona with: a reminder reminds, a task is done and summarized.

With a target the prompt goes to ``runtime.wake`` on that runtime, so the persona answers in its channel with
its own context; without one it is a background call whose reply is only stored in the beat's run history,
so the prompt asks for the bare result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ishiki_host.heartbeat.render import format_time

if TYPE_CHECKING:
    from ishiki_host.store.repos.beat_types import Beat

__all__ = ["LATE_NOTE_AFTER", "prompt_for"]

LATE_NOTE_AFTER = 60.0
"""A run this many seconds or more after its slot says so in the prompt (the host was down or busy)."""

_REMINDER_CHAT = (
    "Remind them now, in this chat. Say plainly what this is about and why it matters: use the reason given "
    "above, or what you know from the conversation and your memories; if you know no reason, do not invent "
    "one. Keep it short and in your own voice, as one message. Do not mention heartbeats, beat ids or cron "
    "schedules."
)
_REMINDER_RECORD = (
    "No one will read your reply in a chat; it is stored in the beat's run history. Reply with the reminder "
    "itself: what it is about and why it matters, in one or two sentences."
)
_TASK_CHAT = (
    "Do it now, using your tools as needed. Then post one short summary in this chat: what you did, what you "
    "found, and anything that needs their attention. If it could not be done, say what stopped it and what "
    "would help. Do not mention heartbeats, beat ids or cron schedules."
)
_TASK_RECORD = (
    "Do it now, using your tools as needed. No one will read your reply in a chat; it is stored in the beat's "
    "run history. End with a short summary of what you did and the result, or of what stopped you."
)


def prompt_for(beat: Beat, *, default_tz: str, now: float, scheduled_for: float | None = None) -> str:
    """The wake prompt for a run of ``beat`` at ``now`` (``scheduled_for`` is the slot it was due at)."""
    tz = beat.timezone or default_tz
    slot = scheduled_for if scheduled_for is not None else now
    repeat = f"it repeats on cron '{beat.cron}' ({tz})" if beat.recurring else "it runs once"
    head = f"[Scheduled {beat.type} '{beat.id}', due {format_time(slot, tz)}; {repeat}]"
    lines = [head, "This is not a message from anyone: a schedule set earlier woke you."]
    if now - slot >= LATE_NOTE_AFTER:
        lines.append(f"It is now {format_time(now, tz)}, {_late(now - slot)} late; mention that only if it matters.")
    if beat.type == "reminder":
        lines += ["", "The reminder:", _quote(beat.text), "", _REMINDER_CHAT if beat.target else _REMINDER_RECORD]
    else:
        lines += ["", "The task:", _quote(beat.text), "", _TASK_CHAT if beat.target else _TASK_RECORD]
    return "\n".join(lines)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.strip().splitlines())


def _late(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{round(minutes / 60)} hours"
