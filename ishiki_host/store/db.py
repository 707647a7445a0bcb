"""Opening ``data/memory.db`` safely, and running its blocking calls off the event loop.

``connect`` opens the file, refuses what it must not touch (not a database, a failed ``PRAGMA quick_check``,
another application's database, a schema newer than this code), turns WAL on and verifies it, then migrates.
It never deletes or rewrites a file it refuses: the checks before WAL and migration only read.

``Database`` owns that one connection. Every call runs in a worker thread, one at a time (an anyio
``CapacityLimiter(1)``), so the connection is never used by two threads at once and async callers never see
"database is locked" from each other. Write work runs inside ``BEGIN IMMEDIATE`` so a second process (e.g.
``ishiki memory clear`` checking the file) waits ``busy_timeout`` instead of failing a lock upgrade.
"""

from __future__ import annotations

import logging
import sqlite3
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread

from ishiki_host.errors import StoreError
from ishiki_host.store.migrations import APPLICATION_ID, MIGRATIONS, Migration, migrate
from ishiki_host.store.tx import transaction

logger = logging.getLogger(__name__)

__all__ = [
    "BUSY_TIMEOUT_MS",
    "MEMORY_DB_NAME",
    "Database",
    "connect",
    "database_in_use",
    "memory_db_files",
    "memory_db_path",
]

T = TypeVar("T")

MEMORY_DB_NAME = "memory.db"
BUSY_TIMEOUT_MS = 5_000
HINT = "move it aside, or delete it with `ishiki memory clear` (this erases the stored memories)"
_SQLITE_HEADER = b"SQLite format 3\x00"


def memory_db_path(data_dir: str | Path) -> Path:
    """The memory database inside a data directory."""
    return Path(data_dir) / MEMORY_DB_NAME


def memory_db_files(db_path: str | Path) -> list[Path]:
    """The database file and its WAL companions (``-wal``, ``-shm``), whether or not they exist."""
    path = Path(db_path)
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def connect(
    path: str | Path,
    *,
    migrations: tuple[Migration, ...] = MIGRATIONS,
    check: bool = True,
    vfs: str | None = None,
) -> sqlite3.Connection:
    """Open, check, set up and migrate the database at ``path``; raises ``StoreError`` on anything wrong.

    ``check`` runs ``PRAGMA quick_check`` before anything is written (O(size of the file), done once per open).
    ``vfs`` selects an SQLite VFS (``unix-dotfile`` for filesystems without POSIX locks); WAL needs shared
    memory, so a VFS without it is refused rather than silently run in another journal mode.
    """
    path = Path(path)
    _refuse_foreign_header(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{path}: cannot create the data directory: {exc}") from exc
    conn = _open(path, vfs)
    try:
        if check:
            _quick_check(conn, path)
        _configure(conn, path)
        migrate(conn, path, migrations, application_id=APPLICATION_ID)
    except sqlite3.Error as exc:
        conn.close()
        hint = "another process holds it; try again" if "locked" in str(exc) else HINT
        raise StoreError(f"{path}: cannot use the memory database ({exc}); {hint}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _refuse_foreign_header(path: Path) -> None:
    """Refuse a non-empty file that does not start with the SQLite header (SQLite would only fail later)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except (FileNotFoundError, NotADirectoryError):
        return  # a new database (or a bad directory, reported when it is created)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the memory database: {exc}") from exc
    if head and head != _SQLITE_HEADER[: len(head)]:
        raise StoreError(f"{path}: not an SQLite database (corrupt or another kind of file); {HINT}")
    if 0 < len(head) < len(_SQLITE_HEADER):
        raise StoreError(f"{path}: truncated SQLite database ({len(head)} bytes); {HINT}")


def _open(path: Path, vfs: str | None) -> sqlite3.Connection:
    """The raw connection: autocommit (we issue BEGIN ourselves), usable from the one worker thread at a time."""
    target = f"file:{urllib.parse.quote(str(path))}?vfs={urllib.parse.quote(vfs)}" if vfs else str(path)
    try:
        conn = sqlite3.connect(
            target,
            uri=vfs is not None,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the memory database: {exc}") from exc
    conn.row_factory = sqlite3.Row
    return conn


def _quick_check(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a damaged file before anything writes to it."""
    try:
        rows = [str(row[0]) for row in conn.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: the memory database is corrupt ({exc}); {HINT}") from exc
    if rows != ["ok"]:
        detail = "; ".join(rows[:3]) + (f" (+{len(rows) - 3} more)" if len(rows) > 3 else "")
        raise StoreError(f"{path}: the memory database failed its integrity check: {detail}; {HINT}")


def _configure(conn: sqlite3.Connection, path: Path) -> None:
    """WAL (verified), foreign keys, a busy timeout and NORMAL sync (durable enough under WAL)."""
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot set up the memory database ({exc}); {HINT}") from exc
    if mode != "wal":
        raise StoreError(
            f"{path}: cannot switch the memory database to WAL mode (SQLite kept journal_mode={mode!r}); "
            "WAL needs a local filesystem with shared-memory and locking support: put data_dir on one"
        )


def database_in_use(path: str | Path) -> bool:
    """Whether another connection (any process) has the database open right now.

    Leaving WAL mode needs an exclusive lock, which SQLite cannot take while any other connection is open,
    so a refused switch means the file is in use. Only call this on a database about to be deleted: it
    leaves the file in rollback-journal mode (the next ``connect`` turns WAL back on).
    """
    path = Path(path)
    if not path.exists():
        return False
    try:
        conn = sqlite3.connect(str(path), timeout=0, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        mode = str(conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower()
    except sqlite3.OperationalError as exc:
        return "locked" in str(exc) or "busy" in str(exc)
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()
    return mode == "wal"


class Database:
    """One connection to the memory database, driven from async code through one worker thread at a time."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self._conn = conn
        self.path = path
        self._limiter = anyio.CapacityLimiter(1)
        self._closed = False

    @classmethod
    async def open(cls, path: str | Path, *, check: bool = True, vfs: str | None = None) -> Database:
        """Open (check, set up, migrate) the database at ``path`` in a worker thread."""
        path = Path(path)
        conn = await anyio.to_thread.run_sync(lambda: connect(path, check=check, vfs=vfs))
        return cls(conn, path)

    @property
    def closed(self) -> bool:
        """Whether ``aclose`` has run."""
        return self._closed

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` in the worker thread (autocommit: each statement sees committed data)."""
        return await anyio.to_thread.run_sync(self._call, fn, False, limiter=self._limiter)

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` in the worker thread inside one ``BEGIN IMMEDIATE`` transaction."""
        return await anyio.to_thread.run_sync(self._call, fn, True, limiter=self._limiter)

    def _call(self, fn: Callable[[sqlite3.Connection], T], write: bool) -> T:
        if self._closed:
            raise StoreError(f"{self.path}: the memory database is closed")
        try:
            if not write:
                return fn(self._conn)
            with transaction(self._conn):
                return fn(self._conn)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc

    async def integrity_problems(self) -> list[str]:
        """Full ``PRAGMA integrity_check`` plus the FTS index check; an empty list means healthy."""

        def check(conn: sqlite3.Connection) -> list[str]:
            rows = [str(row[0]) for row in conn.execute("PRAGMA integrity_check")]
            problems = [] if rows == ["ok"] else rows
            try:
                conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
            except sqlite3.DatabaseError as exc:
                problems.append(f"memories_fts: {exc}")
            return problems

        return await self.read(check)

    async def aclose(self) -> None:
        """Close the connection once the calls already queued have run; later calls raise ``StoreError``."""
        if self._closed:
            return

        def close() -> None:
            if self._closed:
                return
            self._closed = True
            try:
                self._conn.execute("PRAGMA optimize")
            except sqlite3.OperationalError as exc:
                # Another process holds the file (a worker, the supervisor, closing at the same moment): the
                # statistics are only an optimization, so they wait for a later close.
                logger.debug("memory database: PRAGMA optimize skipped at close (%s)", exc)
            finally:
                self._conn.close()

        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(close, limiter=self._limiter)
