"""One-shot reminders a plugin may ask the host for: ``runtime.services.get(REMINDERS)``.

A host that runs heartbeats shares a ``Reminders`` under ``REMINDERS``; ``services.get(REMINDERS)`` is ``None``
when it runs none (no memory database, or ``ishiki.ext.heartbeat`` not installed). ``schedule(reminder)``
makes a one-time ``reminder`` beat (docs/heartbeats.md): at ``due`` the persona of ``profile`` is woken in the
chat ``target`` to remind someone of ``text``, at most at the level ``trust`` (the level of the turn the
request came from), and the runtime ``created_by`` lists it (``list_beats``, ``/beats``). What it returns says
when the beat fires. A one-time reminder beat the maker set in that chat for that minute since ``asked_at``
(the persona's own ``set_beat`` in the same turn) stands for the new one: none is added, ``new`` is false.

When the reminder cannot be set, ``schedule`` raises ``HeartbeatInvalid`` with a reason a person can read (the
time has passed, it is a year or more away, the chat is not the profile's, the level is below ``trusted``...),
and ``StoreError`` when the memory database fails. The built-in memory extension schedules the ``reminder``
memories of ``summarizer: auto`` this way (docs/sessions.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_host.plugins.services import ServiceKey

if TYPE_CHECKING:
    from datetime import datetime

    from ishiki_host.addresses.ids import Target
    from ishiki_host.core.tools import TrustLevel

__all__ = ["REMINDERS", "Reminder", "Reminders", "ScheduledReminder"]


@dataclass(frozen=True, slots=True)
class Reminder:
    """A reminder to schedule: the id of its beat, what to remind of, when (a date-time with its zone; the
    seconds are dropped), the profile and chat that speak, the highest level its turn runs at, the runtime key
    that made it, and when it was asked for (epoch seconds; ``None``: never folded into an earlier beat)."""

    id: str
    text: str
    due: datetime
    profile: str
    target: Target
    trust: TrustLevel
    created_by: str
    asked_at: float | None = None


@dataclass(frozen=True, slots=True)
class ScheduledReminder:
    """A reminder's beat: its id, when it fires (epoch seconds) in which time zone, and whether it is new
    (``False``: a beat set since ``Reminder.asked_at`` for that minute stands for it)."""

    id: str
    at: float
    timezone: str
    new: bool = True


class Reminders:
    """What a host offers for one-shot reminders (see the module docstring); its heartbeat service provides
    the implementation."""

    async def schedule(self, reminder: Reminder) -> ScheduledReminder:
        """Make ``reminder`` a one-time beat; ``HeartbeatInvalid`` says why it cannot be, for a person."""
        raise NotImplementedError


REMINDERS: ServiceKey[Reminders] = ServiceKey("reminders", Reminders)
"""Where a host that runs heartbeats shares its ``Reminders`` (``RuntimeContext.services.get(REMINDERS)``)."""
