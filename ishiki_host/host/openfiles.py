"""The process's open-files limit: raised to the hard limit at start, and how many runtimes fit under it.

A runtime holds one file while it lives: its fact log (``FactLog`` keeps the file open, and its exclusive lock
with it, until the runtime stops or cools: a cooled runtime's log is parked, its file closed until its next
input). Everything else a host opens is shared (the memory database and its WAL,
the data directory's lock) or comes and goes (model and channel sockets, an asset being read). At the usual
soft limit of 1,024 a host therefore ran out of descriptors near its 950th live chat. ``raise_open_files_limit``
lifts the soft limit to the hard one (a ``Host`` does as it starts, so ``ishiki run`` and each of its workers
do); ``ishiki_host.host.budget`` keeps the runtimes alive at once under the limit there is.
"""

from __future__ import annotations

import errno
import os
import resource
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "FILES_PER_RUNTIME",
    "OpenFilesLimit",
    "files_exhausted",
    "open_files",
    "raise_open_files_limit",
    "soft_limit",
]

FILES_PER_RUNTIME = 1
"""The files a live runtime holds open: its fact log (``tests/host/test_open_files.py`` counts them)."""

_NR_OPEN = Path("/proc/sys/fs/nr_open")  # the kernel's ceiling for a soft limit when the hard one is unlimited
_FD_DIRS = (Path("/proc/self/fd"), Path("/dev/fd"))


@dataclass(frozen=True)
class OpenFilesLimit:
    """The soft limit on open files before and after ``raise_open_files_limit``, and the hard limit."""

    before: int
    soft: int
    hard: int

    @property
    def raised(self) -> bool:
        """Whether the soft limit was raised."""
        return self.soft > self.before

    def __str__(self) -> str:
        hard = _shown(self.hard)
        if self.raised:
            return f"open files: soft limit raised from {self.before:,} to {self.soft:,} (hard limit {hard})"
        return f"open files: soft limit {self.soft:,} (hard limit {hard})"


def raise_open_files_limit() -> OpenFilesLimit:
    """Raise this process's soft ``RLIMIT_NOFILE`` to its hard limit (to the kernel's ceiling when the hard
    limit is unlimited); the limits before and after. A limit that cannot be raised is left as it is."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else _kernel_ceiling()
    if soft == resource.RLIM_INFINITY or target <= soft:
        return OpenFilesLimit(before=soft, soft=soft, hard=hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        return OpenFilesLimit(before=soft, soft=soft, hard=hard)
    return OpenFilesLimit(before=soft, soft=target, hard=hard)


def soft_limit() -> int:
    """This process's soft limit on open files."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_files() -> int | None:
    """How many files this process has open (``None`` where the system does not list them)."""
    for folder in _FD_DIRS:
        try:
            return len(os.listdir(folder)) - 1  # listing the folder opens one itself
        except OSError:
            continue
    return None


def files_exhausted(error: BaseException) -> bool:
    """Whether ``error``, or an error it was raised from, is "too many open files" (of the process or the
    system)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.EMFILE, errno.ENFILE):
            return True
        current = current.__cause__ or current.__context__
    return False


def _kernel_ceiling() -> int:
    try:
        return int(_NR_OPEN.read_text())
    except (OSError, ValueError):
        return 1 << 20


def _shown(limit: int) -> str:
    return "unlimited" if limit == resource.RLIM_INFINITY else f"{limit:,}"
