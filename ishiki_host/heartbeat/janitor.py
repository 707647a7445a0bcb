"""The reserved beat ``__clear_images__``: delete stored images and attachments older than an age.

Every attachment a runtime captures is listed in the ``images`` table (``ishiki_host.runtime.captures``); the
host seeds this beat from ``attachments.retention`` of ``ishiki.yaml`` (``clear_images_beat``) unless
``heartbeats.json`` defines it. No model is called. Rows go first (in one transaction), then their files: a
file left behind by a crash in between is harmless garbage, while a row without its file would be a broken
``asset://`` URL. An asset's metadata goes before its bytes (``resources.assets.asset_files``), so a read never
finds half an asset. Only files inside the runtime homes (``<data>/runtimes/``) are removed: a row whose path
points anywhere else (outside the data directory, or through a link out of it) loses its row, its file is not
touched, and the run says so. A link is removed itself, never what it points at.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ishiki_host.heartbeat.rules import CLEAR_IMAGES_ID
from ishiki_host.resources.assets import asset_files
from ishiki_host.store.repos.beat_types import BeatSpec

if TYPE_CHECKING:
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.images import ImageRecord

__all__ = ["CLEAR_IMAGES_CRON", "ClearReport", "clear_images", "clear_images_beat"]

CLEAR_IMAGES_CRON = "30 3 * * *"
"""When the seeded clean-up runs: every night at 03:30 in the host's time zone."""


@dataclass(frozen=True, slots=True)
class ClearReport:
    """What a clearing did: rows deleted, files removed, bytes freed, files that could not be removed."""

    rows: int
    files: int
    bytes: int
    problems: list[str] = field(default_factory=list)

    def summary(self, age: float) -> str:
        """One line for the run history."""
        head = f"deleted {self.rows} attachment(s) older than {age:g} s: {self.files} file(s), {self.bytes} bytes"
        if not self.problems:
            return head
        return f"{head}; {len(self.problems)} file(s) not removed: " + "; ".join(self.problems[:5])


def clear_images_beat(retention: str | None) -> tuple[BeatSpec, ...]:
    """The clean-up beat the host seeds for ``attachments.retention`` (``None``: off, nothing seeded)."""
    if retention is None:
        return ()
    return (BeatSpec(id=CLEAR_IMAGES_ID, text=retention, type="task", cron=CLEAR_IMAGES_CRON),)


async def clear_images(store: MemoryStore, data_dir: Path, age_seconds: float) -> ClearReport:
    """Delete the image rows older than ``age_seconds`` and their files in the runtime homes of ``data_dir``."""
    records = await store.images.delete_older_than(age_seconds)
    return await anyio.to_thread.run_sync(_remove_files, data_dir, records)


def _remove_files(data_dir: Path, records: list[ImageRecord]) -> ClearReport:
    data = data_dir.resolve()
    homes = (data / "runtimes").resolve()  # where the homes are, even when the operator moved them by a link
    files = size = 0
    problems: list[str] = []
    for record in records:
        given = data / record.path
        folder = given.parent.resolve()  # the folder's links are followed, a link at the end is not
        if not folder.is_relative_to(homes) or given.name in ("", ".", ".."):
            problems.append(f"{record.path}: outside the runtime homes")
            continue
        for path in asset_files(folder / given.name):
            removed = _remove(path, record.path, problems)
            if removed is not None:
                files += 1
                size += removed
    return ClearReport(len(records), files, size, problems)


def _remove(path: Path, shown: str, problems: list[str]) -> int | None:
    """Remove ``path``; the bytes freed, or ``None`` when it was not there or could not be removed (noted)."""
    try:
        freed = path.lstat().st_size
        path.unlink()
    except FileNotFoundError:
        return None
    except OSError as exc:
        problems.append(f"{shown}: {exc.strerror or exc}")
        return None
    return freed
