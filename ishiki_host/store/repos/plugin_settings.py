"""Enabled state per tool, channel or extension, read live (a change applies on the next turn).

A row with ``profile = None`` is the global setting; a profile's own row overrides it; with neither, the
caller's default applies (plugins are on unless someone turned them off).

Every turn asks for the effective switches, so ``effective`` answers from memory after the first query of a
(kind, profile); ``set`` and ``unset`` forget what was remembered. The host's process is the only writer of
its database while it runs, so the answer stays live.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from ishiki_host.errors import StoreError
from ishiki_host.store.repos.remembered import Remembered

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.store.db import Database

__all__ = ["PLUGIN_KINDS", "PluginKind", "PluginSetting", "PluginSettingsRepo"]

PluginKind = Literal["tool", "channel", "extension"]
PLUGIN_KINDS: tuple[PluginKind, ...] = get_args(PluginKind)
_COLUMNS = "profile, kind, name, enabled, updated_at"


@dataclass(frozen=True, slots=True)
class PluginSetting:
    """One stored setting; ``profile`` ``None`` is the global one."""

    profile: str | None
    kind: PluginKind
    name: str
    enabled: bool
    updated_at: float

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> PluginSetting:
        """Build from a row selected with the repository's column list."""
        return cls(row[0], row[1], row[2], bool(row[3]), row[4])


def _check(kind: str, name: str, profile: str | None) -> None:
    if kind not in PLUGIN_KINDS:
        raise StoreError(f"plugin kind {kind!r} is not one of {', '.join(PLUGIN_KINDS)}")
    if not name:
        raise StoreError(f"a {kind} setting needs a name")
    if profile == "":
        raise StoreError("profile must be a profile id, or None for the global setting")


def _effective(conn: sqlite3.Connection, profile: str | None, kind: str) -> dict[str, bool]:
    """name → enabled for every plugin of ``kind`` with a setting; the profile's row wins over the global."""
    rows = conn.execute(
        "SELECT name, enabled FROM plugin_settings WHERE kind = ? AND (profile IS NULL OR profile IS ?) "
        "ORDER BY profile IS NOT NULL",
        (kind, profile),
    )
    return {row[0]: bool(row[1]) for row in rows}


class PluginSettingsRepo:
    """The ``plugin_settings`` table."""

    def __init__(self, db: Database, clock: Clock):
        self._db = db
        self._clock = clock
        self._effective: Remembered[tuple[str, str | None], dict[str, bool]] = Remembered()

    async def set(self, kind: PluginKind, name: str, enabled: bool, *, profile: str | None = None) -> PluginSetting:
        """Turn a plugin on or off, for one profile or (``profile=None``) for all."""
        _check(kind, name, profile)
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> PluginSetting:
            conn.execute(
                "INSERT INTO plugin_settings (profile, kind, name, enabled, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (ifnull(profile, ''), kind, name) DO UPDATE SET enabled = excluded.enabled, "
                "updated_at = excluded.updated_at",
                (profile, kind, name, int(enabled), now),
            )
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM plugin_settings WHERE profile IS ? AND kind = ? AND name = ?",
                (profile, kind, name),
            ).fetchone()
            return PluginSetting.from_row(row)

        written = await self._db.write(run)
        self._effective.forget()  # after the write: a read queued before it may have remembered the old state
        return written

    async def unset(self, kind: PluginKind, name: str, *, profile: str | None = None) -> bool:
        """Remove a setting so the next level (global, then the default) applies; whether there was one."""
        _check(kind, name, profile)
        removed = await self._db.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM plugin_settings WHERE profile IS ? AND kind = ? AND name = ?", (profile, kind, name)
                ).rowcount
                > 0
            )
        )
        self._effective.forget()
        return removed

    async def is_enabled(self, kind: PluginKind, name: str, *, profile: str | None, default: bool = True) -> bool:
        """The effective state: the profile's setting, else the global one, else ``default``."""
        _check(kind, name, profile)
        return (await self.effective(kind, profile=profile)).get(name, default)

    async def effective(self, kind: PluginKind, *, profile: str | None) -> dict[str, bool]:
        """Effective state of every plugin of ``kind`` that has a setting (one query, for per-turn use)."""
        _check(kind, "*", profile)

        async def read() -> dict[str, bool]:
            return await self._db.read(lambda conn: _effective(conn, profile, kind))

        return dict(await self._effective.get((kind, profile), read))

    async def all(self, *, profile: str | None = None, kind: PluginKind | None = None) -> list[PluginSetting]:
        """The stored rows (the global ones, plus the profile's when given), filtered by ``kind``."""

        def run(conn: sqlite3.Connection) -> list[PluginSetting]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM plugin_settings WHERE (profile IS NULL OR profile IS ?) "
                "AND (? IS NULL OR kind = ?) ORDER BY kind, name, profile IS NOT NULL",
                (profile, kind, kind),
            )
            return [PluginSetting.from_row(row) for row in rows]

        return await self._db.read(run)
