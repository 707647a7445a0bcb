"""Reminder memories become one-shot beats: what the memory extension does after it stored a ``reminder``.

In ``summarizer: auto`` mode the condense call may classify an exchange as a ``reminder`` and say ``when`` it
is due (a local date-time in the host's zone, ``services.timezone``). ``schedule_reminder`` hands it to the
host's ``Reminders`` (``services.get(REMINDERS)``, the heartbeat service's) as a one-time beat with id
``r-<memory id>`` (``reminder_beat_id``, how retrieval tells it is still to come), the memory's text, the chat
the request came from as its target, the turn's level as its ceiling, and the runtime as its maker (so its
``list_beats`` and ``/beats`` show it). The persona's reply went out already, so a notice confirms it:
``Reminder set for Fri 2026-12-04 18:00 (Europe/Berlin): Remind Ana to call her mother.``

The memory is kept whatever happens to the beat. When no beat is made the reason is logged and the chat is
told, so nobody waits for a reminder that will not come:

- no time named, or one that is not a date and time (``NO_TIME_NOTICE``);
- refused by the host (``REFUSED_NOTICE`` with its reason): the time has passed, it is a year or more away,
  the profile no longer claims the chat, the turn ran below ``trusted``, the database failed...;
- the host runs no heartbeats (``NO_HEARTBEATS_NOTICE``: ``ishiki.ext.heartbeat`` not installed).

A beat the persona set itself for that minute in the same turn (``set_beat``) stands for the reminder: no
second beat, no notice. A turn that answered nobody's message (a beat's own turn, a wake) schedules nothing and
says nothing: no chat asked, and a reminder being given must not set itself again.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ishiki_host.addresses.ids import Target
from ishiki_host.core.subjects import chat_coordinates
from ishiki_host.errors import ConfigError, IshikiError
from ishiki_host.plugins.reminders import REMINDERS, Reminder
from ishiki_host.store.repos.memory_types import reminder_beat_id

if TYPE_CHECKING:
    from ishiki_host.plugins.reminders import ScheduledReminder
    from ishiki_host.plugins.runtime_api import RuntimeContext, TurnReport
    from ishiki_host.sessions.summarizer import Remembered

__all__ = [
    "NO_HEARTBEATS_NOTICE",
    "NO_TIME_NOTICE",
    "REFUSED_NOTICE",
    "SET_NOTICE",
    "host_now",
    "parse_when",
    "schedule_reminder",
]

SET_NOTICE = "Reminder set for {when} ({tz}): {text}"
NO_TIME_NOTICE = "(No reminder set: I could not tell when it is due. Ask again with a day and a time.)"
REFUSED_NOTICE = "(No reminder set: {why}.)"
NO_HEARTBEATS_NOTICE = "(No reminder set: this host runs no heartbeats, so nothing could remind you.)"
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?")


def host_now(runtime: RuntimeContext) -> datetime:
    """The host's time in its zone (``services.timezone``): what the condense call works "on Friday" out from."""
    return datetime.fromtimestamp(runtime.clock.now(), _zone(runtime.services.timezone))


def parse_when(text: str, tz: str) -> datetime:
    """The due time a condense call wrote (``2026-12-04T18:00``; seconds and an offset may follow), read in the
    zone ``tz`` when it names none; ``ValueError`` for anything else, a date without a time of day included."""
    stripped = text.strip()
    if not _DATE_TIME.fullmatch(stripped):
        raise ValueError(f"{text!r} is not a date and time (YYYY-MM-DDTHH:MM)")
    moment = datetime.fromisoformat(stripped)  # ValueError for a 13th month or a 25th hour
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=_zone(tz))


async def schedule_reminder(
    runtime: RuntimeContext, remembered: Remembered, report: TurnReport
) -> ScheduledReminder | None:
    """Make a ``reminder`` memory a one-shot beat in the chat it came from and tell the chat (see the module
    docstring); the beat, or ``None`` when none was made. Errors of the host (``IshikiError``) are logged and
    told, never raised."""
    memory, chat = remembered.memory, _asking_chat(report)
    if memory.type != "reminder" or chat is None:
        return None
    due = _due(runtime, remembered)
    if due is None:
        await runtime.notice(NO_TIME_NOTICE, chat)
        return None
    reminders = runtime.services.get(REMINDERS)
    if reminders is None:
        runtime.logger.warning("memory: reminder %s kept, but this host runs no heartbeats", memory.id)
        await runtime.notice(NO_HEARTBEATS_NOTICE, chat)
        return None
    asked_at = min(entry.ts for entry in report.inbound)
    request = Reminder(
        reminder_beat_id(memory.id), memory.content, due, runtime.profile.id, chat, report.trust,
        str(runtime.key), asked_at,
    )  # fmt: skip
    try:
        scheduled = await reminders.schedule(request)
    except IshikiError as exc:
        why = exc.message if isinstance(exc, ConfigError) else "the host could not store it (see its log)"
        runtime.logger.warning("memory: reminder %s kept, but no beat was made: %s", memory.id, exc)
        await runtime.notice(REFUSED_NOTICE.format(why=why), chat)
        return None
    if scheduled.new:
        when = datetime.fromtimestamp(scheduled.at, _zone(scheduled.timezone)).strftime("%a %Y-%m-%d %H:%M")
        await runtime.notice(SET_NOTICE.format(when=when, tz=scheduled.timezone, text=memory.content), chat)
    return scheduled


def _asking_chat(report: TurnReport) -> Target | None:
    """The chat of the newest message the turn answered; ``None`` for a turn that answered none."""
    for entry in reversed(report.inbound):
        found = chat_coordinates(entry)
        if found is not None:
            return Target(*found)
    return None


def _due(runtime: RuntimeContext, remembered: Remembered) -> datetime | None:
    if remembered.when is None:
        runtime.logger.info("memory: reminder %s names no time; no beat", remembered.memory.id)
        return None
    try:
        return parse_when(remembered.when, runtime.services.timezone)
    except ValueError as exc:
        runtime.logger.warning("memory: reminder %s kept without a beat: %s", remembered.memory.id, exc)
        return None


def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")
