"""Captured attachments: metadata rows pointing at files in the resource center.

The bytes never enter the database (a WAL full of base64 helps nobody); ``path`` is relative to the data
directory. Deleting rows returns what was deleted, and the caller removes those files: if it stops halfway, a
file without a row is harmless garbage, while a row without a file would be a broken ``asset://`` URL.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_host.errors import StoreError

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.store.db import Database

__all__ = ["ImageRecord", "ImagesRepo"]

_COLUMNS = "id, runtime_key, url, path, media_type, size, sha256, created_at"


@dataclass(frozen=True, slots=True)
class ImageRecord:
    """One stored attachment: where it came from, where its bytes are, what it is."""

    id: int
    runtime_key: str
    url: str
    path: str
    media_type: str
    size: int
    sha256: str | None
    created_at: float

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> ImageRecord:
        """Build from a row selected with the repository's column list."""
        return cls(*(row[i] for i in range(8)))


def _get(conn: sqlite3.Connection, runtime_key: str, url: str) -> ImageRecord | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM images WHERE runtime_key = ? AND url = ?", (runtime_key, url)
    ).fetchone()
    return ImageRecord.from_row(row) if row else None


class ImagesRepo:
    """The ``images`` table."""

    def __init__(self, db: Database, clock: Clock):
        self._db = db
        self._clock = clock

    async def add(
        self, runtime_key: str, url: str, *, path: str, media_type: str, size: int, sha256: str | None = None
    ) -> ImageRecord:
        """Record an attachment (re-adding a runtime's URL replaces its metadata and refreshes its age)."""
        if size < 0:
            raise StoreError(f"image size {size} is negative")
        if not (runtime_key and url and path):
            raise StoreError("an image needs its runtime key, asset URL and path")
        now = self._clock.now()

        def run(conn: sqlite3.Connection) -> ImageRecord:
            conn.execute(
                "INSERT INTO images (runtime_key, url, path, media_type, size, sha256, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (runtime_key, url) DO UPDATE SET path = excluded.path, "
                "media_type = excluded.media_type, size = excluded.size, sha256 = excluded.sha256, "
                "created_at = excluded.created_at",
                (runtime_key, url, path, media_type, size, sha256, now),
            )
            record = _get(conn, runtime_key, url)
            assert record is not None  # written just above, in this transaction
            return record

        return await self._db.write(run)

    async def get(self, runtime_key: str, url: str) -> ImageRecord | None:
        """The record of a runtime's asset URL, if any."""
        return await self._db.read(lambda conn: _get(conn, runtime_key, url))

    async def for_runtime(self, runtime_key: str) -> list[ImageRecord]:
        """A runtime's attachments, oldest first."""

        def run(conn: sqlite3.Connection) -> list[ImageRecord]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM images WHERE runtime_key = ? ORDER BY created_at, id", (runtime_key,)
            )
            return [ImageRecord.from_row(row) for row in rows]

        return await self._db.read(run)

    async def delete(self, runtime_key: str, url: str) -> ImageRecord | None:
        """Delete one record; returns it (so the caller deletes its file), or ``None`` if there was none."""

        def run(conn: sqlite3.Connection) -> ImageRecord | None:
            record = _get(conn, runtime_key, url)
            if record is not None:
                conn.execute("DELETE FROM images WHERE id = ?", (record.id,))
            return record

        return await self._db.write(run)

    async def delete_older_than(self, age_seconds: float) -> list[ImageRecord]:
        """Delete every record older than ``age_seconds``; returns them, oldest first, for file removal."""
        cutoff = self._clock.now() - max(0.0, age_seconds)

        def run(conn: sqlite3.Connection) -> list[ImageRecord]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM images WHERE created_at < ? ORDER BY created_at, id", (cutoff,)
            )
            records = [ImageRecord.from_row(row) for row in rows]
            conn.execute("DELETE FROM images WHERE created_at < ?", (cutoff,))
            return records

        return await self._db.write(run)
