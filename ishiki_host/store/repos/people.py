"""The profile a persona keeps of each person it talks with, and of each group chat (``person_profiles``).

A profile belongs to one persona (``profile``) and one subject: a sender (``platform:userId``, kind
``sender``) or a group chat (``platform:selfId channelId``, kind ``chat``). ``min_trust`` is the lowest trust
level a turn must have to be shown it, as for memories; a profile made from exchanges at several levels keeps
the highest of them (what an owner-level exchange added stays owner-level). The summarizer writes profiles;
the owner may rewrite one (``edited_by``), which keeps its level.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ishiki_host.core.tools import TRUST_ORDER
from ishiki_host.errors import StoreError
from ishiki_host.store.repos.memory_types import readable_levels
from ishiki_host.store.text import clean_text

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.store.db import Database

__all__ = ["MAX_PROFILE_CHARS", "PeopleRepo", "PersonProfile", "SubjectKind"]

MAX_PROFILE_CHARS = 1_200
SubjectKind = Literal["sender", "chat"]
_COLUMNS = "profile, subject, kind, name, content, min_trust, edited_by, updated_at"


@dataclass(frozen=True, slots=True)
class PersonProfile:
    """One person's (or group's) profile, as stored."""

    profile: str
    subject: str
    kind: SubjectKind
    name: str | None
    content: str
    min_trust: TrustLevel
    edited_by: Literal["summarizer", "owner"]
    updated_at: float

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> PersonProfile:
        """Build from a row selected with the table's columns in order."""
        return cls(*(row[i] for i in range(8)))

    @property
    def label(self) -> str:
        """The name to show: the person's name when known, else the subject."""
        return self.name or self.subject


def _content(content: str) -> str:
    text = clean_text(content).strip()
    if not text:
        raise StoreError("a person's profile cannot be empty")
    return text[:MAX_PROFILE_CHARS]


class PeopleRepo:
    """The ``person_profiles`` table (see the module docstring)."""

    def __init__(self, db: Database, clock: Clock):
        self._db = db
        self._clock = clock

    async def get(self, profile: str, subject: str) -> PersonProfile | None:
        """The profile of ``subject``, whatever its level (for the owner and the summarizer)."""

        def run(conn: sqlite3.Connection) -> PersonProfile | None:
            sql = f"SELECT {_COLUMNS} FROM person_profiles WHERE profile = ? AND subject = ?"
            row = conn.execute(sql, (profile, subject)).fetchone()
            return PersonProfile.from_row(row) if row else None

        return await self._db.read(run)

    async def shown(self, profile: str, subjects: Collection[str], *, trust: TrustLevel) -> list[PersonProfile]:
        """The profiles of ``subjects`` a turn at ``trust`` may be shown, in the order of ``subjects``."""
        wanted, readable = list(dict.fromkeys(subjects)), readable_levels(trust)
        if not wanted:
            return []

        def run(conn: sqlite3.Connection) -> list[PersonProfile]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM person_profiles WHERE profile = ? AND subject IN "
                f"({', '.join('?' * len(wanted))}) AND min_trust IN ({', '.join('?' * len(readable))})",
                (profile, *wanted, *readable),
            )
            found = {p.subject: p for p in map(PersonProfile.from_row, rows)}
            return [found[s] for s in wanted if s in found]

        return await self._db.read(run)

    async def find(self, profile: str, who: str) -> list[PersonProfile]:
        """The profiles whose subject is ``who``, whose user id is ``who``, or whose name is ``who`` (any case)."""

        def run(conn: sqlite3.Connection) -> list[PersonProfile]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM person_profiles WHERE profile = ? AND (subject = ? OR subject LIKE ? ESCAPE "
                "'\\' OR lower(name) = lower(?)) ORDER BY subject",
                (profile, who, "%:" + who.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_"), who),
            )
            return [PersonProfile.from_row(row) for row in rows]

        return await self._db.read(run)

    async def latest(self, profile: str, *, limit: int = 50) -> list[PersonProfile]:
        """The profiles of ``profile``, most recently updated first."""

        def run(conn: sqlite3.Connection) -> list[PersonProfile]:
            sql = f"SELECT {_COLUMNS} FROM person_profiles WHERE profile = ? ORDER BY updated_at DESC LIMIT ?"
            return [PersonProfile.from_row(row) for row in conn.execute(sql, (profile, max(1, limit)))]

        return await self._db.read(run)

    async def keep(
        self, profile: str, subject: str, kind: SubjectKind, content: str, *, name: str | None, trust: TrustLevel
    ) -> PersonProfile:
        """The summarizer's update: store ``content`` (cut to ``MAX_PROFILE_CHARS``) at the highest of ``trust``
        and the level the profile had."""
        text, now = _content(content), self._clock.now()
        readable_levels(trust)

        def run(conn: sqlite3.Connection) -> PersonProfile:
            old = conn.execute(
                "SELECT min_trust, name FROM person_profiles WHERE profile = ? AND subject = ?", (profile, subject)
            ).fetchone()
            level = trust if old is None else max(trust, old[0], key=TRUST_ORDER.__getitem__)
            conn.execute(
                f"INSERT OR REPLACE INTO person_profiles ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 'summarizer', ?)",
                (profile, subject, kind, name or (old[1] if old else None), text, level, now),
            )
            return PersonProfile(profile, subject, kind, name or (old[1] if old else None), text, level, "summarizer",
                                 now)  # fmt: skip

        return await self._db.write(run)

    async def edit(self, profile: str, subject: str, content: str) -> PersonProfile | None:
        """The owner's rewrite of an existing profile (its level kept); ``None`` when there is none."""
        text, now = _content(content), self._clock.now()

        def run(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE person_profiles SET content = ?, edited_by = 'owner', updated_at = ? "
                "WHERE profile = ? AND subject = ?",
                (text, now, profile, subject),
            )

        await self._db.write(run)
        return await self.get(profile, subject)

    async def delete(self, profile: str, subject: str) -> bool:
        """Delete a profile; whether there was one."""
        sql = "DELETE FROM person_profiles WHERE profile = ? AND subject = ?"
        return await self._db.write(lambda conn: conn.execute(sql, (profile, subject)).rowcount > 0)
