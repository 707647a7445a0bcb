"""Heartbeats: cron beats that wake a persona on a schedule (docs/heartbeats.md).

- ``cron``: five-field expressions in a time zone, next and latest fire times, DST behaviour
- ``rules``: what a valid beat is (one-time rule, tool limits, ``__clear_images__`` ages)
- ``beatfile`` / ``sync``: ``heartbeats.json`` and its seeding into the heartbeat table
- ``scheduler``: one timer for the earliest due beat; runs recorded; catch-up; no overlap
- ``prompts``: the wake prompt of a reminder or a task
- ``janitor``: the native ``__clear_images__`` beat, and the one the host seeds from ``attachments.retention``
- ``tools`` / ``tool_args`` / ``render``: the beat tools and the ``/beats`` listing
- ``runner``: the host's ``BeatRunner`` (a target's runtime is woken; no target: a background model call)
- ``targets``: whether a beat may speak at a target (the named profile is ready and claims the chat)
- ``service``: ``HeartbeatService``, the one scheduler and ``heartbeats.json`` watcher of a host
- ``reminders``: ``BeatReminders``, the host's ``Reminders``: one-time reminder beats other plugins ask for
- ``extension``: ``ishiki.ext.heartbeat``, the beat tools and ``/beats`` in every runtime (on by default)
- ``admin``: ``HeartbeatServiceAdmin``, the host's beats as host plugins manage them (``HeartbeatAdmin``)

The storage is ``MemoryStore.heartbeats`` (``ishiki_host.memory``). Constants live beside what they name:
``rules.CLEAR_IMAGES_ID``, ``rules.FILE_RULES`` / ``TOOL_RULES``, ``beatfile.HEARTBEATS_FILE``,
``tools.BEAT_TOOL_NAMES``.
"""

from ishiki_host.heartbeat.admin import HeartbeatServiceAdmin, admin_for
from ishiki_host.heartbeat.beatfile import BeatFile, TargetValidator, parse_beat_file
from ishiki_host.heartbeat.cron import CronExpr, parse_cron, zone
from ishiki_host.heartbeat.extension import HeartbeatExtension, HeartbeatInstance
from ishiki_host.heartbeat.janitor import ClearReport, clear_images, clear_images_beat
from ishiki_host.heartbeat.prompts import prompt_for
from ishiki_host.heartbeat.reminders import BeatReminders, one_time_cron
from ishiki_host.heartbeat.render import describe_beat, format_time, render_beats
from ishiki_host.heartbeat.rules import BeatRules, check_beat, next_run_for, parse_duration
from ishiki_host.heartbeat.runner import BeatRuntimes, RuntimeBeatRunner, is_beat_turn
from ishiki_host.heartbeat.scheduler import BeatRunner, HeartbeatScheduler
from ishiki_host.heartbeat.service import HeartbeatService
from ishiki_host.heartbeat.sync import BeatFileWatcher, SyncReport, sync_from_file
from ishiki_host.heartbeat.targets import ConfigTargets, heartbeats_on, target_refusal
from ishiki_host.heartbeat.tools import Poker, TargetSource, make_beat_tools, visible_beats

__all__ = [
    "BeatFile",
    "BeatFileWatcher",
    "BeatReminders",
    "BeatRules",
    "BeatRunner",
    "BeatRuntimes",
    "ClearReport",
    "ConfigTargets",
    "CronExpr",
    "HeartbeatExtension",
    "HeartbeatInstance",
    "HeartbeatScheduler",
    "HeartbeatService",
    "HeartbeatServiceAdmin",
    "Poker",
    "RuntimeBeatRunner",
    "SyncReport",
    "TargetSource",
    "TargetValidator",
    "admin_for",
    "check_beat",
    "clear_images",
    "clear_images_beat",
    "describe_beat",
    "format_time",
    "heartbeats_on",
    "is_beat_turn",
    "make_beat_tools",
    "next_run_for",
    "one_time_cron",
    "parse_beat_file",
    "parse_cron",
    "parse_duration",
    "prompt_for",
    "render_beats",
    "sync_from_file",
    "target_refusal",
    "visible_beats",
    "zone",
]
