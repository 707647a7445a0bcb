"""The values of the heartbeat repository: a beat's definition, its stored row, a run, a sync report."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Literal, get_args

from ishiki_host.core.tools import TRUST_ORDER, TrustLevel
from ishiki_host.errors import StoreError

__all__ = ["BEAT_TYPES", "Beat", "BeatRun", "BeatSpec", "BeatSyncReport", "BeatTarget", "BeatType"]

BeatType = Literal["reminder", "task"]
BEAT_TYPES: tuple[BeatType, ...] = get_args(BeatType)


@dataclass(frozen=True, slots=True)
class BeatTarget:
    """Where a beat speaks: a profile and a channel address (``sid`` = ``platform:selfId``)."""

    profile: str
    sid: str
    channel: str


@dataclass(frozen=True, slots=True)
class BeatSpec:
    """What defines a beat, as ``heartbeats.json`` or the ``set_beat`` tool gives it.

    ``timezone`` ``None`` means the host's default; ``target`` ``None`` means a background call whose output
    is only recorded. ``trust`` is the highest level the beat's turns run at: the level of the turn that made
    it (``set_beat``), so a beat never runs above its maker, or the ``trust`` the operator wrote in
    ``heartbeats.json``; ``None`` (a file beat without one, and beats made before levels were recorded) runs at
    the level of the runtime it wakes.
    """

    id: str
    text: str
    type: BeatType
    cron: str
    timezone: str | None = None
    target: BeatTarget | None = None
    recurring: bool = True
    trust: TrustLevel | None = None

    def validate(self) -> BeatSpec:
        """Return ``self``, or raise ``StoreError`` naming the beat and the bad field."""
        if not self.id:
            raise StoreError("a beat needs an id")
        if self.type not in BEAT_TYPES:
            raise StoreError(f"beat {self.id!r}: type {self.type!r} is not one of {', '.join(BEAT_TYPES)}")
        if not self.text.strip():
            raise StoreError(f"beat {self.id!r}: text is empty")
        if not self.cron.strip():
            raise StoreError(f"beat {self.id!r}: cron is empty")
        if self.target and not (self.target.profile and self.target.sid and self.target.channel):
            raise StoreError(f"beat {self.id!r}: a target needs profile, sid and channel")
        if self.trust is not None and self.trust not in TRUST_ORDER:
            raise StoreError(f"beat {self.id!r}: trust {self.trust!r} is not one of {', '.join(TRUST_ORDER)}")
        return self

    def schedule_key(self) -> tuple[str, str | None, bool]:
        """The fields that decide when the beat runs; a change means its next run is recomputed."""
        return (self.cron, self.timezone, self.recurring)


@dataclass(frozen=True, slots=True)
class Beat:
    """A stored beat: its definition plus who made it, when it runs, and whether it is paused."""

    id: str
    text: str
    type: BeatType
    cron: str
    timezone: str | None
    target: BeatTarget | None
    recurring: bool
    managed: bool
    created_by: str | None
    last_run: float | None
    next_run: float | None
    created_at: float
    updated_at: float
    trust: TrustLevel | None = None
    paused: bool = False
    """Paused by an operator (``HeartbeatAdmin.pause``): the scheduler passes it over until it is resumed."""

    @property
    def spec(self) -> BeatSpec:
        """The definition part, e.g. to ``dataclasses.replace`` fields for an update."""
        return BeatSpec(
            self.id, self.text, self.type, self.cron, self.timezone, self.target, self.recurring, self.trust
        )

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Beat:
        """Build from a row selected with the repository's column list."""
        target = BeatTarget(row[5], row[6], row[7]) if row[5] is not None else None
        return cls(
            row[0], row[1], row[2], row[3], row[4], target, bool(row[8]), bool(row[9]), row[10], row[11], row[12],
            row[13], row[14], row[15], bool(row[16]),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class BeatRun:
    """One run of a beat. ``outcome`` is ``running`` until it finishes (``ok``, ``failed``, ``skipped``)."""

    id: int
    beat_id: str
    started_at: float
    finished_at: float | None
    outcome: str
    output: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> BeatRun:
        """Build from a row selected with the repository's run column list."""
        return cls(*(row[i] for i in range(6)))


@dataclass(frozen=True, slots=True)
class BeatSyncReport:
    """What ``sync_managed`` did, by beat id. ``conflicts`` are file ids already used by a user's beat."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the table changed."""
        return bool(self.added or self.updated or self.removed)
