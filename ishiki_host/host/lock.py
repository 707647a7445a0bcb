"""The host's claim on its data directory: an OS lock held for the host's whole life, and the pid file.

Two hosts on one config directory would fight over every fact log and the memory database, and the second's
exit would delete the first's pid file (``ishiki reload`` would then lose the first). So the first thing a
host does with its config is ``claim_data_dir``: an exclusive, non-blocking ``flock`` of
``<data_dir>/ishiki.lock``, held until the host has closed everything else. A second host finds it held and
gets ``ConfigDirLocked`` (naming the holder's pid) before it has written a file, logged a line or started a
channel. The lock is on the data directory, so two config directories sharing one ``data_dir`` are refused
too.

Why these choices:

- ``flock`` is dropped by the kernel when its holder dies (SIGKILL, a crash, power loss): no stale lock, no
  pid to check for liveness. It belongs to the open file description, so two ``Host`` objects of one process
  conflict as two processes do (POSIX ``fcntl`` locks would not, and closing any descriptor of the file would
  drop them). The descriptor is close-on-exec: a subprocess the host starts (a shell tool, an MCP server)
  never holds the lock after the host is gone.
- The lock file is never deleted: unlinking a lock file races with a host opening it (two hosts could each
  lock a different file of one name). It holds the holder's pid, for the refusal's message only.
- ``ishiki.pid`` (what ``ishiki reload`` reads) is written only once the lock is held, and removed at exit
  only while it still names this process.

POSIX only, like the fact log's own lock (``ishiki_host.core._logfile``). On Windows ``msvcrt.locking`` of
the same file would give the same guarantees; the host does not run there today. On network file systems
``flock`` may be local to one machine: keep ``data_dir`` on a local disk.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path

from ishiki_host.errors import ConfigDirLocked

__all__ = ["LOCK_FILE", "PID_FILE", "DataDirClaim", "claim_data_dir"]

logger = logging.getLogger("ishiki_host.host")

LOCK_FILE = "ishiki.lock"
PID_FILE = "ishiki.pid"


class DataDirClaim:
    """A held lock of a data directory (see the module docstring); ``release`` gives it up."""

    def __init__(self, data_dir: Path, fd: int):
        self.data_dir = data_dir
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        """Whether this claim still holds the lock."""
        return self._fd is not None

    def write_pid(self) -> None:
        """Write ``ishiki.pid`` (a failure is logged: the host runs on, ``ishiki reload`` will not find it)."""
        try:
            (self.data_dir / PID_FILE).write_text(f"{os.getpid()}\n", encoding="utf-8")
        except OSError as exc:
            logger.warning("could not write %s: %s (`ishiki reload` will not find this host)", PID_FILE, exc)

    def release(self) -> None:
        """Remove the pid file if it still names this process, then drop the lock (idempotent)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        path = self.data_dir / PID_FILE
        with contextlib.suppress(OSError):
            if path.read_text(encoding="utf-8").strip() == str(os.getpid()):
                path.unlink()
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # the pid inside names a holder only while there is one
        os.close(fd)  # closing the last descriptor of the open file drops the flock


def claim_data_dir(data_dir: Path) -> DataDirClaim:
    """Lock ``data_dir`` (created if missing) for this host and write its pid file.

    Raises ``ConfigDirLocked`` when another host holds the lock; nothing in the directory changes then.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _holder(fd)
        os.close(fd)
        who = f"pid {pid}" if pid is not None else "another process"
        raise ConfigDirLocked(f"another host ({who}) is running on {data_dir}", path=str(path), pid=pid) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    claim = DataDirClaim(data_dir, fd)
    claim.write_pid()
    return claim


def _holder(fd: int) -> int | None:
    """The pid the lock file names (``None`` while the holder has not written it yet, or it is unreadable)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
