"""Beats as text: the ``/beats`` listing, one-line descriptions for tool results, times in a beat's zone."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ishiki_host.errors import HeartbeatInvalid
from ishiki_host.heartbeat.cron import zone

if TYPE_CHECKING:
    from ishiki_host.store.repos.beat_types import Beat, BeatTarget

__all__ = ["describe_beat", "format_target", "format_time", "render_beats"]

_TEXT_LIMIT = 80


def format_time(when: float, tz: str) -> str:
    """``when`` as ``Mon 2024-03-04 09:00 CET`` in the zone named ``tz`` (UTC if the zone is unknown)."""
    try:
        info = zone(tz)
    except HeartbeatInvalid:
        info = zone("UTC")
    return datetime.fromtimestamp(when, info).strftime("%a %Y-%m-%d %H:%M %Z")


def format_target(target: BeatTarget | None) -> str:
    """Where a beat speaks, or that it only records its output."""
    if target is None:
        return "no chat (output recorded only)"
    return f"{target.profile} in {target.sid} {target.channel}"


def describe_beat(beat: Beat, default_tz: str) -> str:
    """One line: id, type, schedule, next run, where it speaks, and its text (cut at 80 characters)."""
    tz = beat.timezone or default_tz
    kind = beat.type if beat.recurring else f"one-time {beat.type}"
    flags = " [from heartbeats.json]" if beat.managed else ""
    if beat.paused:
        when = "paused"
    else:
        when = f"next {format_time(beat.next_run, tz)}" if beat.next_run is not None else "not scheduled"
    text = " ".join(beat.text.split())
    if len(text) > _TEXT_LIMIT:
        text = text[: _TEXT_LIMIT - 1] + "…"
    return f"{beat.id}{flags}: {kind}, cron '{beat.cron}' ({tz}), {when}, to {format_target(beat.target)}: {text}"


def render_beats(beats: Sequence[Beat], tz: str) -> str:
    """The ``/beats`` reply: the beats given (those of the current runtime), soonest first.

    ``tz`` is the host's zone, used for beats without one of their own.
    """
    if not beats:
        return "No beats here. Ask me to set one (a reminder or a task on a schedule)."
    ordered = sorted(beats, key=lambda b: (b.next_run is None, b.next_run or 0.0, b.id))
    lines = [f"{len(beats)} beat{'s' if len(beats) != 1 else ''}:"]
    lines.extend(f"- {describe_beat(beat, tz)}" for beat in ordered)
    return "\n".join(lines)
