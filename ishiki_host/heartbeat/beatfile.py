"""``heartbeats.json``: the operator's beats, seeded into the heartbeat table as ``managed`` beats.

The file is a JSON array of objects::

    [{"id": "stretch", "text": "Stand up and stretch", "cron": "0 10-18/2 * * 1-5", "type": "reminder",
      "timezone": "Europe/Berlin", "target": {"profile": "alice", "sid": "telegram:1", "channel": "private:9"},
      "recurring": true, "trust": "trusted"}]

``id``, ``text``, ``cron`` and ``type`` are required (``type`` may be left out for ``__clear_images__``).
``trust`` is the operator's ceiling for the beat's turns (``owner``, ``trusted``, ``untrusted``): they run at
the lower of it and the level of the runtime the beat wakes; left out, at the runtime's level. Each
entry is checked on its own: a bad one is reported (naming the file, its index and its id) and skipped, and the
beat stored under its id, if any, is kept as it was; the others still load. A file that is not a JSON array
changes nothing. A missing file changes nothing either (write ``[]`` to remove every managed beat).

The file is read by the host's hardened JSON loader (``ishiki_host.config.jsonio``): a file over 1 MiB, not
UTF-8, nested deeper than 64 levels or holding an integer of more than 100 digits is one ``HeartbeatInvalid``
naming the file and line, like any other file that is not a JSON array. A key written twice in an entry makes
that entry bad.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.config.jsonio import parse_json
from ishiki_host.config.yamlio import read_text
from ishiki_host.core.tools import TRUST_ORDER
from ishiki_host.errors import HeartbeatInvalid
from ishiki_host.heartbeat.rules import CLEAR_IMAGES_ID, FILE_RULES, check_beat
from ishiki_host.store.repos.beat_types import BEAT_TYPES, BeatSpec, BeatTarget

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.store.repos.beat_types import BeatSyncReport, BeatType

__all__ = [
    "HEARTBEATS_FILE",
    "BeatFile",
    "TargetValidator",
    "conflict_errors",
    "parse_beat_file",
    "read_beat_file",
    "read_beat_file_sync",
]

HEARTBEATS_FILE = "heartbeats.json"
TargetValidator = Callable[[BeatTarget], "str | None"]
"""Says why no profile can speak at a target (``None`` when one claims it); the host provides it."""

_KEYS = ("id", "text", "cron", "type", "timezone", "target", "recurring", "trust")
_TARGET_KEYS = ("profile", "sid", "channel")
_ENTRY = re.compile(r"\[(\d+)\]")
_KEPT = "the managed beats are kept as they were"


@dataclass(frozen=True, slots=True)
class BeatFile:
    """A parsed ``heartbeats.json``: the valid beats, the errors of the others, the ids to keep as stored."""

    specs: tuple[BeatSpec, ...] = ()
    errors: tuple[HeartbeatInvalid, ...] = ()
    keep_ids: frozenset[str] = field(default_factory=frozenset)


def parse_beat_file(
    text: str, *, file: str, default_tz: str, now: float, target_validator: TargetValidator | None = None
) -> BeatFile:
    """Check every entry of the file's ``text``; ``HeartbeatInvalid`` if it is not a JSON array at all."""
    entries, duplicates = _load_array(text, file)
    ids = [raw.get("id") if isinstance(raw, Mapping) else None for raw in entries]
    counts = Counter(i for i in ids if isinstance(i, str))
    specs: list[BeatSpec] = []
    errors: list[HeartbeatInvalid] = []
    keep: set[str] = set()
    for index, raw in enumerate(entries):
        beat_id = ids[index] if isinstance(ids[index], str) and ids[index] else None
        try:
            if index in duplicates:
                raise duplicates[index]
            if beat_id is not None and counts[beat_id] > 1:
                where = ", ".join(f"[{i}]" for i, other in enumerate(ids) if other == beat_id)
                raise HeartbeatInvalid(f"id used by entries {where}; each is skipped")
            specs.append(_entry(raw, default_tz, now, target_validator))
        except HeartbeatInvalid as exc:
            who = f"beat {beat_id!r}: " if beat_id else ""
            errors.append(HeartbeatInvalid(who + exc.message, file=file, path=f"[{index}]"))
            if beat_id:
                keep.add(beat_id)
    return BeatFile(tuple(specs), tuple(errors), frozenset(keep))


def _load_array(text: str, file: str) -> tuple[list[Any], dict[int, HeartbeatInvalid]]:
    """The entries, and the first duplicate-key error of each entry that has one (by index)."""
    try:
        doc = parse_json(text, file, HeartbeatInvalid)
    except HeartbeatInvalid as exc:
        message = f"not valid JSON: {exc.message}; {_KEPT}"
        raise HeartbeatInvalid(message, file=file, line=exc.line, path=exc.path) from exc
    if not isinstance(doc.data, list):
        raise HeartbeatInvalid(
            f"expected a JSON array of beats, got {_kind(doc.data)}; {_KEPT}",
            file=file,
        )
    duplicates: dict[int, HeartbeatInvalid] = {}
    for error in doc.errors:
        entry = _ENTRY.match(error.path)
        if entry is not None:
            inside = error.path[entry.end() :].lstrip(".")
            duplicates.setdefault(int(entry.group(1)), HeartbeatInvalid(f"{inside}: {error.message}"))
    return doc.data, duplicates


def _entry(raw: object, default_tz: str, now: float, validator: TargetValidator | None) -> BeatSpec:
    if not isinstance(raw, Mapping):
        raise HeartbeatInvalid(f"expected an object, got {_kind(raw)}")
    _no_unknown_keys(raw, _KEYS, "")
    beat_id = _string(raw, "id")
    spec = BeatSpec(
        id=beat_id,
        text=_string(raw, "text"),
        type=_type(raw, beat_id),
        cron=_string(raw, "cron"),
        timezone=_string(raw, "timezone") if "timezone" in raw else None,
        target=_target(raw.get("target")),
        recurring=_recurring(raw),
        trust=_trust(raw),
    )
    check_beat(spec, default_tz=default_tz, now=now, rules=FILE_RULES)
    if spec.target is not None and validator is not None:
        reason = validator(spec.target)
        if reason:
            raise HeartbeatInvalid(f"target: {reason}")
    return spec


def _string(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    if key not in raw:
        raise HeartbeatInvalid(f"missing {key!r}")
    if not isinstance(value, str) or not value.strip():
        raise HeartbeatInvalid(f"{key!r} must be a non-empty string, got {_kind(value)}")
    return value


def _type(raw: Mapping[str, Any], beat_id: str) -> BeatType:
    if beat_id == CLEAR_IMAGES_ID and "type" not in raw:
        return "task"
    value = _string(raw, "type")
    if value not in BEAT_TYPES:
        raise HeartbeatInvalid(f"'type' {value!r} is not one of {', '.join(BEAT_TYPES)}")
    return value


def _recurring(raw: Mapping[str, Any]) -> bool:
    value = raw.get("recurring", True)
    if not isinstance(value, bool):
        raise HeartbeatInvalid(f"'recurring' must be true or false, got {_kind(value)}")
    return value


def _trust(raw: Mapping[str, Any]) -> TrustLevel | None:
    if "trust" not in raw:
        return None
    value = raw["trust"]
    if not isinstance(value, str) or value not in TRUST_ORDER:
        shown = repr(value) if isinstance(value, str) else _kind(value)
        raise HeartbeatInvalid(f"'trust' must be one of {', '.join(TRUST_ORDER)}, got {shown}")
    level: TrustLevel = value  # type: ignore[assignment]  # checked against TRUST_ORDER just above
    return level


def _target(value: object) -> BeatTarget | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise HeartbeatInvalid(f"'target' must be an object with profile, sid and channel, got {_kind(value)}")
    _no_unknown_keys(value, _TARGET_KEYS, "target.")
    parts = [_string(value, key) for key in _TARGET_KEYS]
    return BeatTarget(*parts)


def _no_unknown_keys(raw: Mapping[str, Any], known: Sequence[str], prefix: str) -> None:
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
            raise HeartbeatInvalid(f"unknown key {prefix}{key!r}{hint}")


def _kind(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else type(value).__name__)


async def read_beat_file(path: Path) -> str | None:
    """The file's text, or ``None`` if it does not exist; ``HeartbeatInvalid`` if it cannot be read."""
    return await anyio.to_thread.run_sync(read_beat_file_sync, path)


def read_beat_file_sync(path: Path) -> str | None:
    """``read_beat_file`` for callers without an event loop (``ishiki check``): size and encoding checked."""
    if not path.exists():
        return None
    try:
        return read_text(path, str(path), HeartbeatInvalid)
    except HeartbeatInvalid as exc:
        raise HeartbeatInvalid(f"{exc.message}; {_KEPT}", file=exc.file, line=exc.line) from exc


def conflict_errors(report: BeatSyncReport, file: str) -> list[HeartbeatInvalid]:
    """One error per file id already used by a beat made in a chat (those entries were skipped)."""
    return [
        HeartbeatInvalid(f"beat {beat_id!r}: a beat made in a chat already has this id; rename it here", file=file)
        for beat_id in report.conflicts
    ]
