"""The JSON schemas of the beat tools, and how their arguments become a beat's fields.

Targets: a beat made in a chat speaks in that chat unless told otherwise. ``target`` may name another place;
parts it leaves out come from the current chat (``{"channel": "group:42"}`` is another chat of the same
account). ``background: true`` makes a beat that speaks nowhere; its output is only recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

from ishiki_host.errors import ToolError
from ishiki_host.store.repos.beat_types import BEAT_TYPES, BeatTarget

__all__ = ["ID_SCHEMA", "beat_fields_schema", "check_args", "resolve_target", "set_schema", "update_schema"]

_TARGET_PARTS = ("profile", "sid", "channel")


def beat_fields_schema(default_tz: str) -> dict[str, Any]:
    """The properties ``set_beat`` and ``update_beat`` share (descriptions name the host's zone)."""
    return {
        "text": {
            "type": "string",
            "minLength": 1,
            "description": "For a reminder: what to remind of and why. For a task: what to do and what to report.",
        },
        "cron": {
            "type": "string",
            "minLength": 1,
            "description": (
                "When, as 5-field cron 'minute hour day-of-month month day-of-week': '0 9 * * 1-5' is weekdays "
                "at 09:00, '*/30 8-18 * * *' every half hour from 08:00 to 18:30. If both day fields are set, "
                "either one matching is enough. A one-time beat needs one minute, hour, day and month and '*' as "
                "day of week: '30 14 24 12 *' is 24 December at 14:30. Every-minute schedules are refused."
            ),
        },
        "type": {
            "type": "string",
            "enum": list(BEAT_TYPES),
            "description": "'reminder': remind someone of something. 'task': do something and summarize it.",
        },
        "recurring": {
            "type": "boolean",
            "description": "false: run once at the next matching time, then delete the beat. Default true.",
        },
        "timezone": {
            "type": "string",
            "description": f"IANA time zone of the cron times, e.g. 'Europe/Berlin'. Default: {default_tz}.",
        },
        "target": {
            "type": "object",
            "properties": {part: {"type": "string", "minLength": 1} for part in _TARGET_PARTS},
            "additionalProperties": False,
            "description": (
                "Where the beat speaks: profile, sid (platform:selfId) and channel. Default: this chat; "
                "parts left out are this chat's."
            ),
        },
        "background": {
            "type": "boolean",
            "description": "true: speak in no chat; the output is only recorded. Do not combine with target.",
        },
    }


ID_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string", "minLength": 1, "description": "The beat's id, as list_beats shows."}},
    "required": ["id"],
    "additionalProperties": False,
}
"""The arguments of ``delete_beat``."""


def set_schema(default_tz: str) -> dict[str, Any]:
    """The ``set_beat`` argument schema."""
    return {
        "type": "object",
        "properties": beat_fields_schema(default_tz),
        "required": ["text", "cron", "type"],
        "additionalProperties": False,
    }


def update_schema(default_tz: str) -> dict[str, Any]:
    """The ``update_beat`` argument schema: an id and any of the beat's fields."""
    properties = {"id": ID_SCHEMA["properties"]["id"], **beat_fields_schema(default_tz)}
    return {"type": "object", "properties": properties, "required": ["id"], "additionalProperties": False}


def check_args(tool: str, schema: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    """``ToolError`` listing what in ``args`` breaks ``schema`` (the model reads it and retries)."""
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(dict(args)), key=lambda e: list(e.path))
    if errors:
        problems = "; ".join(_describe(error) for error in errors[:5])
        raise ToolError(f"{tool}: {problems}")


def _describe(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(part) for part in error.path)
    return f"{where}: {error.message}" if where else error.message


def resolve_target(args: Mapping[str, Any], base: BeatTarget | None) -> BeatTarget | None:
    """The target ``args`` ask for, filling gaps from ``base`` (the current chat or the beat's own target)."""
    if args.get("background"):
        if args.get("target"):
            raise ToolError("give either a target or background: true, not both")
        return None
    given: Mapping[str, str] = args.get("target") or {}
    parts = {part: given.get(part) or (getattr(base, part) if base else None) for part in _TARGET_PARTS}
    missing = [part for part, value in parts.items() if not value]
    if missing:
        raise ToolError(
            f"the target lacks {', '.join(missing)} and this chat has no address to fill it; give "
            "profile, sid and channel, or background: true"
        )
    return BeatTarget(parts["profile"] or "", parts["sid"] or "", parts["channel"] or "")
