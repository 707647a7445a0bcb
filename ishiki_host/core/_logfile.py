"""Low-level file work of the fact log: the writer's lock, block-wise line readers and torn-tail repair.

Everything here is synchronous and runs either at open time (in a worker thread) or inside reader
iterators; ``FactLog`` owns the policy (when to sync, what to cache, how to warn).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ishiki_host.errors import FactLogError, FactLogLocked

__all__ = [
    "BLOCK_SIZE",
    "ReadStats",
    "acquire_lock",
    "iter_lines_forward",
    "iter_lines_reverse",
    "release_lock",
    "set_aside_torn_tail",
    "write_all",
]

BLOCK_SIZE = 64 * 1024
"""Bytes read per ``pread`` when scanning a log."""

_ENTRY_PREFIX = b'{"id":'
"""Every line this writer produces starts so (``Entry.to_json`` puts ``id`` first)."""


@dataclass(slots=True)
class ReadStats:
    """Counters of the reading work a log did; tests use them to check read cost without timing."""

    bytes_read: int = 0
    lines_parsed: int = 0
    syncs: int = 0


def lock_sidecar(path: Path) -> Path:
    """The file beside the log that names the process holding its lock."""
    return path.with_name(path.name + ".lock")


def acquire_lock(fd: int, path: Path) -> None:
    """Take the exclusive, non-blocking ``flock`` of an open log, or raise ``FactLogLocked``.

    ``flock`` locks belong to the open file description, so a second open of the same file in this process
    conflicts too, and the kernel drops the lock when the holder dies (no stale locks after a crash).
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(path)
        who = f" (held by pid {holder})" if holder else ""
        raise FactLogLocked(f"fact log {path} is already open by another writer{who}") from None
    sidecar = lock_sidecar(path)
    with contextlib.suppress(OSError):
        sidecar.write_text(f"{os.getpid()}\n", encoding="ascii")


def release_lock(fd: int, path: Path) -> None:
    """Drop the lock's sidecar, then the lock itself (closing ``fd`` is the caller's)."""
    with contextlib.suppress(OSError):
        if _read_holder(path) == os.getpid():
            lock_sidecar(path).unlink()
    fcntl.flock(fd, fcntl.LOCK_UN)


def _read_holder(path: Path) -> int | None:
    try:
        text = lock_sidecar(path).read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def iter_lines_reverse(fd: int, end: int, stats: ReadStats, *, block: int = BLOCK_SIZE) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, line)`` for every line in ``[0, end)``, newest first, reading ``block`` bytes at a time.

    ``end`` must be 0 or just after a newline. Lines are yielded without their newline. The cost is the bytes
    of the lines consumed (plus at most one block), never the size of the file.
    """
    pos = end
    carry = b""  # the head of a line whose start lies before the block just read, with its newline
    while pos > 0:
        size = min(block, pos)
        pos -= size
        data = os.pread(fd, size, pos)
        stats.bytes_read += len(data)
        data += carry
        parts = data[:-1].split(b"\n")
        offset = pos + len(data)
        for part in reversed(parts[1:]):
            offset -= len(part) + 1
            yield offset, part
        if pos == 0:
            yield 0, parts[0]
        else:
            carry = parts[0] + b"\n"


def iter_lines_forward(
    fd: int, end: int, stats: ReadStats, *, start: int = 0, block: int = BLOCK_SIZE
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, line)`` for every line in ``[start, end)``, oldest first; ``end`` follows a newline."""
    pos = start
    pending = b""
    pending_at = start
    while pos < end:
        data = os.pread(fd, min(block, end - pos), pos)
        if not data:
            break
        stats.bytes_read += len(data)
        pos += len(data)
        pending += data
        lines = pending.split(b"\n")
        for line in lines[:-1]:
            yield pending_at, line
            pending_at += len(line) + 1
        pending = lines[-1]


def parses(line: bytes) -> bool:
    """Whether ``line`` is a JSON object with the fields of an entry."""
    try:
        raw = json.loads(line)
    except ValueError:
        return False
    return isinstance(raw, dict) and {"id", "type", "ts"} <= raw.keys() and isinstance(raw.get("data", {}), dict)


def set_aside_torn_tail(fd: int, path: Path, stats: ReadStats, announce: Callable[[str], None]) -> str | None:
    """Move a torn or unparseable tail of the log into ``<log>.corrupt`` and truncate it away.

    The tail is everything after the last line that parses: a last line without its newline (the writer died
    inside a write), or complete lines that are not entries (a filesystem that zero-filled the tail after a
    power loss). Returns a warning describing what was moved, or ``None`` when the tail was whole.
    A non-empty file with no entry at all that does not start like one is refused: it is not a fact log.

    ``announce`` gets the warning once the tail is safe in ``.corrupt`` and before the log is cut: a process
    killed between the two then leaves the tail in place, to be set aside and announced again at the next
    open, never a repair nobody was told of (the crash harness found that window).
    """
    size = os.fstat(fd).st_size
    if size == 0:
        return None
    last = os.pread(fd, 1, size - 1)
    good_end = _end_of_last_good_line(fd, size if last == b"\n" else _last_newline_end(fd, size, stats), stats)
    if good_end == size:
        return None
    if good_end == 0 and not os.pread(fd, len(_ENTRY_PREFIX), 0).startswith(_ENTRY_PREFIX):
        raise FactLogError(f"{path} does not look like a fact log: no line of it is an entry")
    torn = os.pread(fd, size - good_end, good_end)
    _append_corrupt(path, good_end, torn)
    warning = (
        f"fact log {path}: set aside a torn tail of {len(torn)} bytes at offset {good_end} into {path.name}.corrupt"
    )
    announce(warning)
    os.ftruncate(fd, good_end)
    os.fsync(fd)
    return warning


def _last_newline_end(fd: int, size: int, stats: ReadStats) -> int:
    """The offset just after the last newline before ``size`` (0 when there is none)."""
    pos = size
    while pos > 0:
        start = max(0, pos - BLOCK_SIZE)
        data = os.pread(fd, pos - start, start)
        stats.bytes_read += len(data)
        index = data.rfind(b"\n")
        if index >= 0:
            return start + index + 1
        pos = start
    return 0


def _end_of_last_good_line(fd: int, end: int, stats: ReadStats) -> int:
    """Walk back from ``end`` (just after a newline) to the end of the last line that parses."""
    for offset, line in iter_lines_reverse(fd, end, stats):
        stats.lines_parsed += 1
        if line.strip() and parses(line):
            return offset + len(line) + 1
    return 0


def _append_corrupt(path: Path, offset: int, data: bytes) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    header = f"# {stamp} torn tail of {path.name} at offset {offset}, {len(data)} bytes\n".encode()
    corrupt = path.with_name(path.name + ".corrupt")
    fd = os.open(corrupt, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        write_all(fd, header + data + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
