"""Per-file locks shared by every workspace of the process, so two edits of one file never lose each other.

A file is keyed by the device and inode of the directory holding it plus its name there, so two paths that
reach one file through symlinks share a lock. Locks are taken in worker threads (the file operations are
blocking) and forgotten when nobody holds or waits for them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FileKey", "PathLocks", "file_locks"]

FileKey = tuple[int, int, str]
"""``(st_dev, st_ino)`` of the parent directory and the name in it."""


class PathLocks:
    """A lock per key, created on first use and dropped when unused."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._locks: dict[FileKey, tuple[threading.Lock, list[int]]] = {}

    @contextmanager
    def hold(self, key: FileKey) -> Iterator[None]:
        """Hold the lock of ``key`` for the block (blocking: call from a worker thread)."""
        with self._mutex:
            lock, users = self._locks.setdefault(key, (threading.Lock(), [0]))
            users[0] += 1
        try:
            with lock:
                yield
        finally:
            with self._mutex:
                users[0] -= 1
                if users[0] == 0:
                    del self._locks[key]

    def __len__(self) -> int:
        return len(self._locks)


file_locks = PathLocks()
"""The process-wide registry (two runtimes may mount one directory)."""
