"""A data directory's fact logs copied into the PostgreSQL store, as they are (``ishiki store migrate``).

    report = await import_fact_logs(pool, data_dir, holder=f"migrate-{uuid.uuid4().hex}")
    for runtime in report.runtimes:
        print(runtime.key, runtime.outcome, runtime.entries)

Every ``<data_dir>/runtimes/.../facts.jsonl`` is one runtime's log (its directory names the runtime key,
``addresses.keys``). Each is read the way the file log reads it when it opens (``core._logfile``): under the
file's own writer lock (a log another process has open is refused), a torn or unparseable tail set aside into
``facts.jsonl.corrupt`` and cut off, as ``FactLog.open`` would at the next start, so it is never copied; a bad
line in the middle is skipped with a warning, as the file log skips it when reading. The lines that remain go
into ``ishiki_facts`` as they are (``PgFactLog`` stores the file's JSONL line), with their own ids, and
``ishiki_fact_marks.durable_id`` becomes the last id: a host then opens the log where the file left off.

A runtime is written under its lease (``runtime:<key>``, the name a host serves it under), taken by ``holder``
and given back at once, in one ``LeaseBook.fenced`` transaction: all of its rows or none. So it can be run
again: a runtime whose rows are there already, the same (a fleet may have appended more since), is skipped
("already there"); one whose rows differ is refused naming the runtime and the first id that differs, and
nothing is written for it; one whose lease a live host holds is refused naming that host.

Only fact logs move: the memory database (``memory.db``: memories, sessions, heartbeats, usage, pairing)
stays in the data directory: its tables are not on PostgreSQL yet.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ishiki_host.addresses.keys import RuntimeKey, unescape_segment
from ishiki_host.core import _logfile
from ishiki_host.core.entries import Entry
from ishiki_host.errors import FactLogError, FactLogLocked
from ishiki_host.store.pg.leases import Lease, LeaseBook

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["NOT_COPIED", "OUTCOMES", "ImportReport", "Outcome", "RuntimeImport", "fact_log_paths", "import_fact_logs"]

Outcome = Literal["copied", "already there", "empty", "differs", "refused", "unreadable"]
OUTCOMES: tuple[Outcome, ...] = ("copied", "already there", "empty", "differs", "refused", "unreadable")
"""Every outcome, the good ones (nothing left to do) first."""
_GOOD = frozenset(OUTCOMES[:3])
NOT_COPIED = (
    "memory.db (memories, sessions, heartbeats, usage, pairing) stays in the data dir: its tables are not on "
    "PostgreSQL yet"
)
"""What stays in the data directory, said by every report."""

_BATCH = 5000  # rows per INSERT: one statement's arrays stay small, the transaction stays one
_ROWS = "SELECT id, line FROM ishiki_facts WHERE runtime_key = %s ORDER BY id"
_INSERT = (
    "INSERT INTO ishiki_facts (runtime_key, id, line) "
    "SELECT %s, entry.id, entry.line FROM unnest(%s::bigint[], %s::text[]) AS entry(id, line)"
)
_MARK = (
    "INSERT INTO ishiki_fact_marks (runtime_key, durable_id) VALUES (%s, %s) ON CONFLICT (runtime_key) "
    "DO UPDATE SET durable_id = GREATEST(ishiki_fact_marks.durable_id, EXCLUDED.durable_id)"
)


@dataclass(frozen=True, slots=True)
class RuntimeImport:
    """What became of one runtime's log: its ``key`` (text), the file, the ``outcome``, how many ``entries``
    the file holds, why (``detail``) when it was not copied, and what was repaired or skipped (``warnings``)."""

    key: str
    path: Path
    outcome: Outcome
    entries: int = 0
    detail: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether nothing is left to do for it (copied, already there, or empty)."""
        return self.outcome in _GOOD


@dataclass(frozen=True, slots=True)
class ImportReport:
    """Every runtime's ``RuntimeImport``, in the order of their files' paths."""

    runtimes: tuple[RuntimeImport, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """Whether every runtime is in the store now."""
        return all(r.ok for r in self.runtimes)

    def counts(self) -> dict[str, int]:
        """How many runtimes had each outcome (every outcome, zeros too)."""
        return {outcome: sum(r.outcome == outcome for r in self.runtimes) for outcome in OUTCOMES}


@dataclass(frozen=True, slots=True)
class _FileLines:
    """A log's ``(id, line)`` pairs, oldest first, and the warnings of reading it."""

    lines: list[tuple[int, str]]
    warnings: list[str]


def fact_log_paths(data_dir: Path) -> list[Path]:
    """Every runtime's ``facts.jsonl`` under ``data_dir`` (channel mode, then cross mode; sorted)."""
    root = data_dir / "runtimes"
    return sorted(root.glob("*/*/*/facts.jsonl")) + sorted(root.glob("*/main/facts.jsonl"))


def runtime_key_of(data_dir: Path, path: Path) -> RuntimeKey:
    """The runtime whose home holds ``path``; ``ValueError`` when its directory names none (or was cut)."""
    segments = path.parent.relative_to(data_dir / "runtimes").parts
    names = [unescape_segment(s) for s in segments]
    key = RuntimeKey.for_cross(names[0]) if segments[1:] == ("main",) else RuntimeKey(*names)
    if key.segments() != segments:
        raise ValueError(f"{path.parent} is not the home of {key}")
    return key


async def import_fact_logs(
    pool: AsyncConnectionPool[Any], data_dir: Path, *, holder: str, lease_seconds: float = 60.0
) -> ImportReport:
    """Copy every fact log under ``data_dir`` into the store of ``pool`` (see the module docstring). The
    database is brought to the fleet's schema first (``StoreError`` when it is newer than this host knows)."""
    book = LeaseBook(pool, holder, seconds=lease_seconds)
    await book.setup()
    return ImportReport(tuple([await _import_one(book, data_dir, path) for path in fact_log_paths(data_dir)]))


async def _import_one(book: LeaseBook, data_dir: Path, path: Path) -> RuntimeImport:
    try:
        key = str(runtime_key_of(data_dir, path))
    except ValueError as exc:
        name = str(path.parent.relative_to(data_dir / "runtimes"))
        return RuntimeImport(name, path, "unreadable", detail=f"cannot tell which runtime it belongs to: {exc}")
    try:
        read = await anyio.to_thread.run_sync(_read_lines, path)
    except FactLogLocked as exc:
        return RuntimeImport(key, path, "refused", detail=str(exc))
    except FactLogError as exc:
        return RuntimeImport(key, path, "unreadable", detail=str(exc))
    found = RuntimeImport(key, path, "empty", len(read.lines), warnings=tuple(read.warnings))
    if not read.lines:
        return found
    lease = await book.acquire(f"runtime:{key}")
    if lease is None:
        current = await book.current(f"runtime:{key}")
        who = current.holder if current is not None else "another host"
        return _with(found, "refused", f"its lease is held by {who}, which serves it: stop that host first")
    try:
        return await _copy(book, lease, found, read.lines)
    finally:
        await book.release(lease)


async def _copy(book: LeaseBook, lease: Lease, found: RuntimeImport, lines: list[tuple[int, str]]) -> RuntimeImport:
    """Write ``lines`` under ``lease`` unless rows are there already (then compare them)."""
    async with book.fenced(lease) as conn:
        stored = [(int(i), str(line)) for i, line in await (await conn.execute(_ROWS, (found.key,))).fetchall()]
        if stored:
            differs = _first_difference(stored, lines)
            if differs is None:
                newer = len(stored) - len(lines)
                return _with(found, "already there", f"{newer} newer entries in the store" if newer else "")
            return _with(found, "differs", f"the store's rows for it differ from the file's, from id {differs} on")
        for start in range(0, len(lines), _BATCH):
            batch = lines[start : start + _BATCH]
            await conn.execute(_INSERT, (found.key, [i for i, _ in batch], [line for _, line in batch]))
        await conn.execute(_MARK, (found.key, lines[-1][0]))
    return _with(found, "copied")


def _first_difference(stored: Sequence[tuple[int, str]], lines: Sequence[tuple[int, str]]) -> int | None:
    """The first id where the store's rows and the file's lines part (``None``: the file's are all there,
    the store may have more after them)."""
    for (stored_id, stored_line), (file_id, line) in zip(stored, lines, strict=False):
        if (stored_id, stored_line) != (file_id, line):
            return min(stored_id, file_id)
    return None if len(stored) >= len(lines) else lines[len(stored)][0]


def _with(found: RuntimeImport, outcome: Outcome, detail: str = "") -> RuntimeImport:
    return RuntimeImport(found.key, found.path, outcome, found.entries, detail, found.warnings)


def _read_lines(path: Path) -> _FileLines:
    """The log's lines as the file log reads them (see the module docstring); ``FactLogError`` when another
    writer has it open, it cannot be read, or it is no fact log."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)  # read-write: cutting a torn tail writes
    except OSError as exc:
        raise FactLogError(f"cannot open {path}: {exc.strerror or exc}") from exc
    try:
        _logfile.acquire_lock(fd, path)
        try:
            return _parse(fd, path)
        finally:
            _logfile.release_lock(fd, path)
    except OSError as exc:
        raise FactLogError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _parse(fd: int, path: Path) -> _FileLines:
    stats = _logfile.ReadStats()
    warnings: list[str] = []
    _logfile.set_aside_torn_tail(fd, path, stats, lambda warning: warnings.append(f"{warning} (not copied)"))
    lines: list[tuple[int, str]] = []
    for offset, raw in _logfile.iter_lines_forward(fd, os.fstat(fd).st_size, stats):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
            entry_id = Entry.from_json(line).id
        except (ValueError, KeyError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
            warnings.append(f"{path}: skipped a bad line at offset {offset}: {exc}")
            continue
        if lines and entry_id <= lines[-1][0]:
            raise FactLogError(f"{path}: entry id {entry_id} at offset {offset} follows id {lines[-1][0]}")
        lines.append((entry_id, line))
    return _FileLines(lines, warnings)
