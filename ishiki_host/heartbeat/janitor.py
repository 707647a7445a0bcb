"""The reserved beat ``__clear_images__``: delete stored images and attachments older than an age.

No model is called. Rows go first (in one transaction), then their files: a file left behind by a crash in
between is harmless garbage, while a row without its file would be a broken ``asset://`` URL. A row whose path
points outside the data directory loses its row but its file is not touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.images import ImageRecord

__all__ = ["ClearReport", "clear_images"]


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


async def clear_images(store: MemoryStore, data_dir: Path, age_seconds: float) -> ClearReport:
    """Delete the image rows older than ``age_seconds`` and their files under ``data_dir``."""
    records = await store.images.delete_older_than(age_seconds)
    return await anyio.to_thread.run_sync(_remove_files, data_dir, records)


def _remove_files(data_dir: Path, records: list[ImageRecord]) -> ClearReport:
    root = data_dir.resolve()
    files = size = 0
    problems: list[str] = []
    for record in records:
        path = (root / record.path).resolve()
        if not path.is_relative_to(root):
            problems.append(f"{record.path}: outside the data directory")
            continue
        try:
            freed = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"{record.path}: {exc.strerror or exc}")
            continue
        files += 1
        size += freed
    return ClearReport(len(records), files, size, problems)
