"""``BeatReminders``: the host's ``Reminders`` (``ishiki_host.plugins.reminders``) as one-time reminder beats.

The host shares one under ``REMINDERS`` beside its ``HeartbeatService`` (``ishiki_host.host.beats``). A
``Reminder`` becomes a one-time ``reminder`` beat whose cron names its minute in the host's zone
(``one_time_cron``: 18:00 on 4 December is ``0 18 4 12 *``), with the reminder's target, level and maker, so the
maker's ``list_beats`` and ``/beats`` show it. It is refused with ``HeartbeatInvalid``, whose message is meant
for the person who asked, when:

- the level is below ``trusted``, the beat tools' own: a reminder never lets someone make a beat they could
  not make with ``set_beat``;
- its minute has come already;
- it is a year or more away (the beat tools' limit: a one-time beat fires within a year);
- the profile may not speak in its chat (``HeartbeatService.check_target``: a chat the profile no longer
  claims, a profile that turns heartbeats off);
- the maker already has ``max_beats`` beats.

A one-time reminder beat the maker set in that chat for that minute since ``Reminder.asked_at`` (the
persona's own ``set_beat`` in the same turn) stands for the new one: it comes back with ``new=False``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ishiki_host.core.tools import trust_allows
from ishiki_host.errors import HeartbeatInvalid
from ishiki_host.heartbeat.cron import zone
from ishiki_host.heartbeat.render import format_target, format_time
from ishiki_host.heartbeat.rules import ONE_TIME_HORIZON, TOOL_RULES, check_beat
from ishiki_host.plugins.reminders import Reminders, ScheduledReminder
from ishiki_host.store.repos.beat_types import BeatSpec, BeatTarget

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.heartbeat.service import HeartbeatService
    from ishiki_host.plugins.reminders import Reminder
    from ishiki_host.store.repos.beat_types import Beat

__all__ = ["REMINDER_TRUST", "BeatReminders", "one_time_cron"]

REMINDER_TRUST: TrustLevel = "trusted"
"""The lowest level whose reminders become beats: the level of the beat tools."""


def one_time_cron(moment: datetime) -> str:
    """The one-time cron of ``moment``'s minute, in its own zone (``0 18 4 12 *``)."""
    return f"{moment.minute} {moment.hour} {moment.day} {moment.month} *"


def _local_minute(moment: datetime, tz: str) -> datetime:
    """``moment``'s minute in the zone ``tz``; a naive ``moment`` is read as a wall time there."""
    info = zone(tz)
    local = moment.astimezone(info) if moment.tzinfo is not None else moment.replace(tzinfo=info)
    return local.replace(second=0, microsecond=0)


class BeatReminders(Reminders):
    """One-time reminder beats on ``service`` (see the module docstring)."""

    def __init__(self, service: HeartbeatService, *, max_beats: int = 100):
        self._service = service
        self._max_beats = max_beats

    async def schedule(self, reminder: Reminder) -> ScheduledReminder:
        """Store the reminder's beat and re-arm the scheduler; ``HeartbeatInvalid`` says why not."""
        if not trust_allows(reminder.trust, REMINDER_TRUST):
            raise HeartbeatInvalid(f"only {REMINDER_TRUST} people may set reminders here")
        service, tz = self._service, self._service.default_tz
        target = BeatTarget(reminder.profile, reminder.target.sid, reminder.target.channel_id)
        due = _local_minute(reminder.due, tz)
        spec = BeatSpec(reminder.id, reminder.text, "reminder", one_time_cron(due), tz, target, False, reminder.trust)
        at = self._first_run(spec, due)
        earlier = await self._set_since(reminder, target, at)
        if earlier is not None:
            return ScheduledReminder(earlier.id, at, tz, new=False)
        reason = service.check_target(target)
        if reason:
            raise HeartbeatInvalid(f"I cannot speak in {format_target(target)}: {reason}")
        if len(await service.store.heartbeats.find(created_by=reminder.created_by)) >= self._max_beats:
            raise HeartbeatInvalid(f"this chat already has {self._max_beats} beats; delete some first")
        beat = await service.store.heartbeats.add(spec, next_run=at, created_by=reminder.created_by)
        service.poke()
        return ScheduledReminder(beat.id, at, tz)

    def _first_run(self, spec: BeatSpec, due: datetime) -> float:
        """When ``spec`` fires: ``due``, unless that has passed or is a year or more away."""
        now, tz = self._service.store.clock.now(), self._service.default_tz
        shown = format_time(due.timestamp(), tz)
        if due.timestamp() <= now:
            raise HeartbeatInvalid(f"{shown} has passed")
        if due.timestamp() - now > ONE_TIME_HORIZON:
            raise HeartbeatInvalid(f"{shown} is a year or more away; reminders fire within a year")
        first = check_beat(spec, default_tz=tz, now=now, rules=TOOL_RULES)
        # The cron names no year: a date a year or more ahead would fire at this year's occurrence instead.
        if datetime.fromtimestamp(first, zone(tz)).date() != due.date():
            raise HeartbeatInvalid(f"{shown} is a year or more away; reminders fire within a year")
        return first

    async def _set_since(self, reminder: Reminder, target: BeatTarget, at: float) -> Beat | None:
        """A one-time reminder beat the maker set at ``target`` for ``at`` since the reminder was asked for."""
        if reminder.asked_at is None:
            return None
        beats = await self._service.store.heartbeats.find(created_by=reminder.created_by, target=target)
        same = (b for b in beats if b.type == "reminder" and not b.recurring and b.next_run == at)
        return next((b for b in same if b.created_at >= reminder.asked_at), None)
