"""The checks of ``ishiki doctor`` that stay on this machine: the data directory and the host's lock.

The data directory must be writable by the user the host runs as, and owned by it (a directory left by
``sudo ishiki run`` is the classic trap: the next run as yourself cannot write its fact logs). Writability is
tried, not guessed from the mode bits: a file is created and removed again, which also catches read-only
mounts, ACLs and root's privileges. Free space is judged by ``space_level``.

The lock: a running host holds an exclusive ``flock`` of ``<data_dir>/ishiki.lock`` and has written its pid
into it (``ishiki_host.host.lock``). Doctor opens the file read-only (it never creates it) and tries a shared
lock without waiting: got it, no host runs there (and it is dropped at once); refused, a host does, and the
pid in the file says which and whether it is alive here.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ishiki_host.channels.base import Finding, FindingLevel
from ishiki_host.host.lock import LOCK_FILE

__all__ = [
    "FREE_BYTES",
    "FREE_SHARE",
    "HostLock",
    "data_dir_findings",
    "lock_finding",
    "space_level",
]

FREE_BYTES = 1 << 30
"""Less free space than this (1 GiB) is worth a warning: fact logs and captured media only grow."""
FREE_SHARE = 0.05
"""So is less than this share of the file system."""


def space_level(free: int, total: int) -> FindingLevel:
    """``warning`` when ``free`` bytes are under ``FREE_BYTES`` or under ``FREE_SHARE`` of ``total``;
    ``error`` when nothing is left; else ``ok``."""
    if free <= 0:
        return "error"
    if free < FREE_BYTES or (total > 0 and free / total < FREE_SHARE):
        return "warning"
    return "ok"


def data_dir_findings(data_dir: Path) -> list[Finding]:
    """Permissions and free space of ``data_dir`` (see the module docstring)."""
    what = f"data dir {data_dir}"
    if not data_dir.exists():
        parent = next((p for p in data_dir.parents if p.exists()), Path("/"))
        problem = _write_problem(parent)
        if problem is not None:
            return [Finding("error", what, f"missing, and {parent} is not writable: {problem}", _fix_owner(parent))]
        return [Finding("ok", what, f"does not exist yet; `ishiki run` creates it in {parent}"), _space(what, parent)]
    if not data_dir.is_dir():
        return [Finding("error", what, "exists but is not a directory", "move it away or set data_dir elsewhere")]
    found: list[Finding] = []
    owner = data_dir.stat().st_uid
    problem = _write_problem(data_dir)
    if problem is not None:
        found.append(Finding("error", what, f"not writable: {problem}", _fix_owner(data_dir)))
    elif owner != os.geteuid():
        detail = f"owned by {_user(owner)}, not by {_user(os.geteuid())} who runs this"
        found.append(Finding("warning", what, detail, _fix_owner(data_dir)))
    else:
        found.append(Finding("ok", what, f"writable, owned by {_user(owner)}"))
    found.append(_space(what, data_dir))
    return found


def _write_problem(directory: Path) -> str | None:
    """Why a file cannot be created in ``directory`` (``None``: it can; it is removed again at once)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".ishiki-doctor-", dir=directory)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    return None


def _fix_owner(directory: Path) -> str:
    user = _user(os.geteuid())
    return f"run the host as the directory's owner, or `chown -R {user} {directory}` and `chmod -R u+rwX {directory}`"


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _space(what: str, directory: Path) -> Finding:
    try:
        stats = os.statvfs(directory)
    except OSError as exc:
        return Finding("warning", f"{what} space", f"cannot read the free space: {exc.strerror or exc}")
    free, total = stats.f_bavail * stats.f_frsize, stats.f_blocks * stats.f_frsize
    share = free / total if total else 0.0
    detail = f"{_size(free)} free of {_size(total)} ({share:.0%})"
    level = space_level(free, total)
    fix = (
        None if level == "ok" else "free some space (old media: attachments.retention in ishiki.yaml) or move data_dir"
    )
    return Finding(level, f"{what} space", detail, fix)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class HostLock:
    """What the lock of a data directory says: ``held`` by a running host (``pid``, ``alive``), or not."""

    held: bool
    pid: int | None = None
    alive: bool = False


def read_lock(data_dir: Path) -> HostLock | str:
    """The state of ``data_dir``'s lock, or why it could not be read."""
    path = data_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return HostLock(held=False)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            pid = int(text) if text.isdigit() else None
            return HostLock(held=True, pid=pid, alive=pid is not None and _alive(pid))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return HostLock(held=False)
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user
        return True
    return True


def lock_finding(data_dir: Path) -> tuple[Finding, HostLock | None]:
    """The finding about a host on ``data_dir``, and the lock's state (``None`` when unreadable)."""
    what = "host lock"
    lock = read_lock(data_dir)
    if isinstance(lock, str):
        path = data_dir / LOCK_FILE
        return Finding("warning", what, f"cannot read {path}: {lock}", _fix_owner(data_dir)), None
    if not lock.held:
        return Finding("ok", what, f"no host is running on {data_dir}"), lock
    if lock.pid is None:
        detail = f"another process holds {data_dir / LOCK_FILE} (no pid written yet)"
        return Finding("warning", what, detail, "a host is starting there; look again in a moment"), lock
    if lock.alive:
        detail = f"a host (pid {lock.pid}, alive) is running on {data_dir}: a second `ishiki run` there is refused"
        fix = (
            f"fine if it is this config's host (`ishiki status`); otherwise stop it (`kill {lock.pid}`) or give "
            "this config a data_dir of its own"
        )
        return Finding("warning", what, detail, fix), lock
    detail = (
        f"{data_dir / LOCK_FILE} is held, but pid {lock.pid} it names is not alive here: a host in another "
        "container or on another machine (a network file system) uses this directory"
    )
    return Finding("error", what, detail, "stop that host, or keep data_dir on a local disk of its own"), lock
