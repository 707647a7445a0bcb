"""Learned skills: the ``skills/<name>/SKILL.md`` files of the config directory, mirrored in the database.

The files are the truth; ``sync`` makes the table equal to the set read from disk in one transaction (adds,
updates, removals). ``enabled`` is the database's own state and survives syncs of an unchanged skill.
``all()`` is remembered between writes: every turn lists the skills.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ishiki_host.errors import StoreError
from ishiki_host.store.repos.remembered import Remembered

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.store.db import Database

__all__ = ["LearnedSkill", "LearnedSkillsRepo", "SkillFile", "SkillSyncReport"]

_COLUMNS = "name, description, body_hash, path, enabled, updated_at"


@dataclass(frozen=True, slots=True)
class SkillFile:
    """A skill as read from disk: its name, description, a hash of its body and its path."""

    name: str
    description: str
    body_hash: str
    path: str


@dataclass(frozen=True, slots=True)
class LearnedSkill:
    """A skill row."""

    name: str
    description: str
    body_hash: str
    path: str
    enabled: bool
    updated_at: float

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> LearnedSkill:
        """Build from a row selected with the repository's column list."""
        return cls(row[0], row[1], row[2], row[3], bool(row[4]), row[5])


@dataclass(frozen=True, slots=True)
class SkillSyncReport:
    """What a sync changed, by skill name."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether anything changed."""
        return bool(self.added or self.updated or self.removed)


def _all(conn: sqlite3.Connection) -> list[LearnedSkill]:
    return [LearnedSkill.from_row(row) for row in conn.execute(f"SELECT {_COLUMNS} FROM learned_skills ORDER BY name")]


def _sync(conn: sqlite3.Connection, files: Sequence[SkillFile], now: float) -> SkillSyncReport:
    stored = {skill.name: skill for skill in _all(conn)}
    wanted = {f.name: f for f in files}
    report = SkillSyncReport()
    for name in sorted(stored.keys() - wanted.keys()):
        conn.execute("DELETE FROM learned_skills WHERE name = ?", (name,))
        report.removed.append(name)
    for name, f in sorted(wanted.items()):
        old = stored.get(name)
        if old is None:
            conn.execute(
                "INSERT INTO learned_skills (name, description, body_hash, path, updated_at) VALUES (?, ?, ?, ?, ?)",
                (f.name, f.description, f.body_hash, f.path, now),
            )
            report.added.append(name)
        elif (old.description, old.body_hash, old.path) != (f.description, f.body_hash, f.path):
            conn.execute(
                "UPDATE learned_skills SET description = ?, body_hash = ?, path = ?, updated_at = ? WHERE name = ?",
                (f.description, f.body_hash, f.path, now, name),
            )
            report.updated.append(name)
    return report


class LearnedSkillsRepo:
    """The ``learned_skills`` table."""

    def __init__(self, db: Database, clock: Clock):
        self._db = db
        self._clock = clock
        self._all: Remembered[None, tuple[LearnedSkill, ...]] = Remembered()  # every turn lists the skills

    def _written(self) -> None:
        self._all.forget()

    async def sync(self, files: Sequence[SkillFile]) -> SkillSyncReport:
        """Make the table equal to ``files`` (the whole current set) in one transaction."""
        counts = Counter(f.name for f in files)
        duplicates = sorted(n for n, count in counts.items() if count > 1)
        if duplicates:
            raise StoreError(f"skill names must be unique; repeated: {', '.join(duplicates)}")
        if "" in counts:
            raise StoreError("a skill needs a name")
        now = self._clock.now()
        report = await self._db.write(lambda conn: _sync(conn, files, now))
        self._written()
        return report

    async def all(self) -> list[LearnedSkill]:
        """Every skill, by name (remembered until the next write through this repository)."""

        async def read() -> tuple[LearnedSkill, ...]:
            return tuple(await self._db.read(_all))

        return list(await self._all.get(None, read))

    async def get(self, name: str) -> LearnedSkill | None:
        """One skill by name."""

        def run(conn: sqlite3.Connection) -> LearnedSkill | None:
            row = conn.execute(f"SELECT {_COLUMNS} FROM learned_skills WHERE name = ?", (name,)).fetchone()
            return LearnedSkill.from_row(row) if row else None

        return await self._db.read(run)

    async def set_enabled(self, name: str, enabled: bool) -> bool:
        """Turn a skill on or off; whether the skill exists."""
        now = self._clock.now()
        changed = await self._db.write(
            lambda conn: (
                conn.execute(
                    "UPDATE learned_skills SET enabled = ?, updated_at = ? WHERE name = ?", (int(enabled), now, name)
                ).rowcount
                > 0
            )
        )
        self._written()
        return changed
