"""The fact log: one append-only JSONL file per agent, the record of everything that happened.

``await FactLog.open(path)`` takes the file's exclusive lock (a second writer, in this process or another,
gets ``FactLogLocked``), sets a torn tail aside into ``<file>.corrupt`` and recovers the next id. Appends are
serialized and durable per the fsync policy:

- ``always``: every append is fsynced before it returns;
- ``turn`` (default): appends made outside a turn (``turn=None``: inbound messages, which a channel confirms
  only once durable) are fsynced at once (or, with ``sync=False``, by the caller's own ``sync()``: the agent
  lets a turn start while an inbound message's fsync is under way); inside a turn the agent calls ``sync()``
  after each step's batch and at the turn's end;
- ``never``: the OS decides (a process crash loses nothing, a power loss may).

Text that UTF-8 cannot encode (a lone surrogate) is stored with U+FFFD in its place
(``ishiki_host.core.text``): an append never fails on what a message says.

Reads go backwards from the end in blocks and start from a cache of recent entries, so reading the last N
entries costs O(N), never O(file). The cache holds ``cache_size`` entries and grows to hold the window a
``read_back`` reads (up to ``max_cache_bytes`` of the file, ``MAX_CACHE_BYTES`` by default), so a context
engine reading the same window step after step parses it once, not at every step. A bad line in the middle
is skipped with a warning. A reader that follows the log (a dashboard showing a conversation live) awaits
``wait_appended(after_id)`` and then reads what came after that id. The format is documented in ``docs/factlog.md``.

An idle log can give its file back: ``park()`` makes it durable, releases the lock and closes the file (a cooled
runtime does this, so idle chats hold no file open); the next append or read opens it again, takes the lock
again (``FactLogLocked`` if another writer took it meanwhile) and reads again what another hand appended.

A log edited by hand under the running host is noticed at the next read or append: a file that changed size
is read again (its torn tail set aside, the cache rebuilt, ``generation`` counted up so readers that keep
their own copy rebuild it too); a file replaced or removed is refused with a ``FactLogError`` naming it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Literal, TypeVar

import anyio

from ishiki_host.core import _logfile
from ishiki_host.core.clock import Clock, SystemClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.followers import Followers
from ishiki_host.core.text import clean_text
from ishiki_host.errors import FactLogError
from ishiki_host.jsontypes import Json

__all__ = ["MAX_CACHE_BYTES", "FactLog", "FsyncPolicy", "ReadStats", "Syncer"]

logger = logging.getLogger(__name__)

FsyncPolicy = Literal["always", "turn", "never"]
Syncer = Callable[[int], None]
"""Makes a file descriptor durable (``os.fsync``); injectable so tests can count calls."""
ReadStats = _logfile.ReadStats
T = TypeVar("T")

_POLICIES = ("always", "turn", "never")
_THREAD_WRITE_BYTES = 256 * 1024  # larger appends are written from a worker thread
MAX_CACHE_BYTES = 32 * 1024 * 1024
"""The most of the file (in bytes, newest first) the read cache grows to hold for a window read back."""


class FactLog:
    """An open fact log, holding its file's exclusive lock until ``close()``.

    ``warnings`` lists what was repaired or skipped (also logged); ``stats`` counts bytes read, lines parsed
    and fsyncs. ``wait_appended(after_id)`` returns once an entry newer than ``after_id`` is written (or the
    log is closed), for a reader that follows it.
    """

    def __init__(
        self,
        path: Path,
        fd: int,
        *,
        fsync: FsyncPolicy,
        clock: Clock,
        syncer: Syncer,
        cache_size: int,
        stats: ReadStats,
        max_cache_bytes: int = 0,
    ):
        self.path = path
        self.fsync: FsyncPolicy = fsync
        self.warnings: list[str] = []
        self.stats = stats
        self._fd = fd
        self._clock = clock
        self._syncer = syncer
        self._cache: deque[tuple[int, Entry]] = deque()
        self._base = cache_size  # the cache's size when no window needs more (and after shrink_cache)
        self._limit = cache_size  # grows to hold what read_back reads: see _warm
        self._max_cache_bytes = max_cache_bytes or MAX_CACHE_BYTES
        self._generation = 0
        self._on_shrink: list[Callable[[], None]] = []
        self._floor = 0  # disk reads continue below this offset once the cache is exhausted
        self._size = os.fstat(fd).st_size
        self._last_id = 0
        self._synced = (self._size, 0)
        self._bad_offsets: set[int] = set()
        self._lock = anyio.Lock()  # an append yields once: see docs/benchmarks.md, "A leaner turn"
        # fast_acquire: a sync that finds its lock free goes on without a trip through the event loop (three a
        # turn; the fsync behind it runs in a worker thread anyway).
        self._sync_lock = anyio.Lock(fast_acquire=True)
        self._closed = False
        self._thread_reads = 0  # reads running in worker threads; close() waits for them
        self._reads_done = anyio.Event()
        self._followers = Followers()  # readers waiting in wait_appended
        self._parked_inode: int | None = None  # set while ``park`` has the file closed (see ``_unpark``)

    # -- opening and closing ---------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncPolicy = "turn",
        clock: Clock | None = None,
        cache_size: int = 256,
        syncer: Syncer | None = None,
        max_cache_bytes: int = MAX_CACHE_BYTES,
    ) -> FactLog:
        """Open (creating it and its directory if needed) and lock the log at ``path``.

        ``cache_size`` entries are cached; the cache grows to hold a window ``read_back`` reads, up to
        ``max_cache_bytes`` of the file.

        Raises ``FactLogLocked`` when another writer holds it and ``FactLogError`` when it cannot be opened.
        """
        if fsync not in _POLICIES:
            raise ValueError(f"fsync policy must be one of always, turn, never; got {fsync!r}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0; got {cache_size}")
        if max_cache_bytes < 1:
            raise ValueError(f"max_cache_bytes must be >= 1; got {max_cache_bytes}")
        return await anyio.to_thread.run_sync(
            cls._open_sync, Path(path), fsync, clock or SystemClock(), syncer or os.fsync, cache_size, max_cache_bytes
        )

    @classmethod
    def _open_sync(
        cls, path: Path, fsync: FsyncPolicy, clock: Clock, syncer: Syncer, cache_size: int, max_cache_bytes: int
    ) -> FactLog:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            created = not path.exists()
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise FactLogError(f"cannot open fact log {path}: {exc.strerror or exc}") from exc
        try:
            _logfile.acquire_lock(fd, path)
            if created:
                _fsync_dir(path.parent)
            stats = ReadStats()
            torn = _logfile.set_aside_torn_tail(fd, path, stats, _log_warning)  # logged before the log is cut
            if fsync != "never":
                os.fsync(fd)  # what an earlier writer left in the page cache counts as durable from here on
            log = cls(path, fd, fsync=fsync, clock=clock, syncer=syncer, cache_size=cache_size, stats=stats,
                      max_cache_bytes=max_cache_bytes)  # fmt: skip
            if torn:
                log.warnings.append(torn)
            log._load_tail()
            return log
        except OSError as exc:
            os.close(fd)
            raise FactLogError(f"cannot open fact log {path}: {exc.strerror or exc}") from exc
        except BaseException:
            os.close(fd)
            raise

    def _load_tail(self) -> None:
        """Fill the cache with the newest entries and recover the last id."""
        self._floor, self._last_id = 0, 0
        for offset, line in _logfile.iter_lines_reverse(self._fd, self._size, self.stats):
            entry = self._parse(offset, line)
            if entry is None:
                continue
            if not self._last_id:
                self._last_id = entry.id
            if len(self._cache) >= self._limit:
                self._floor = self._cache[0][0] if self._cache else self._size
                break
            self._cache.appendleft((offset, entry))
        self._synced = (self._size, self._last_id)

    async def close(self) -> None:
        """Sync (unless the policy is ``never``), release the lock and close the file. Idempotent.

        The lock and the file are released even when that last sync fails (its ``FactLogError`` is raised
        after), so the log can be opened again once the disk is healthy.
        """
        with anyio.CancelScope(shield=True):
            async with self._lock:
                if self._closed and self._fd < 0:
                    return
                try:
                    if not self._closed:
                        await self.sync()
                finally:
                    self._closed = True
                    self._wake_followers()
                    while self._thread_reads:
                        await self._reads_done.wait()
                    fd, self._fd = self._fd, -1
                    self._parked_inode = None
                    if fd >= 0:  # (a parked log has no file open)
                        try:
                            _logfile.release_lock(fd, self.path)
                        finally:
                            os.close(fd)

    async def __aenter__(self) -> FactLog:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def where(self) -> str:
        """Where the log lives, for messages."""
        return str(self.path)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` ran."""
        return self._closed

    @property
    def parked(self) -> bool:
        """Whether ``park`` has the file closed (the next append or read opens it again)."""
        return self._parked_inode is not None

    async def park(self) -> bool:
        """Make every entry durable, release the lock and close the file, keeping the cache: the next append
        or read opens it again (see the module docstring). Returns whether it did; a log that is closed,
        parked already, or in the middle of a read from the file keeps its file.
        """
        async with self._lock:
            if self._closed or self.parked:
                return False
            await self.sync()
            # No await from here on: no append (the lock) and no read (on the event loop) comes in between.
            if self._thread_reads or self._closed or (self.fsync != "never" and self._synced[0] < self._size):
                return False
            fd, self._fd = self._fd, -1
            try:
                self._parked_inode = os.fstat(fd).st_ino
                _logfile.release_lock(fd, self.path)
            finally:
                os.close(fd)
            return True

    def _unpark(self) -> None:
        """Open the file of a parked log again and take its lock (a few system calls: on the event loop)."""
        inode = self._parked_inode
        if inode is None or self._closed:
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)  # no O_CREAT: it must still be there
        except OSError as exc:
            raise FactLogError(
                f"cannot open fact log {self.path} again: {exc.strerror or exc}; it was closed while its runtime "
                "was idle, and is gone or unreadable now"
            ) from exc
        try:
            if os.fstat(fd).st_ino != inode:  # another file under its name: refused at every call, as unparked
                self._check_same_file_as(inode)
            _logfile.acquire_lock(fd, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._parked_inode = fd, None

    # -- writing ---------------------------------------------------------------------------------------

    @property
    def last_id(self) -> int:
        """The id of the newest entry (0 for an empty log)."""
        return self._last_id

    @property
    def durable_id(self) -> int:
        """The id of the newest entry known to be fsynced (entries up to it survive a power loss)."""
        return self._synced[1]

    async def append(self, type: str, data: Mapping[str, Json], *, turn: int | None = None, sync: bool = True) -> Entry:
        """Append one entry; returns it as stored (``data`` round-tripped through JSON)."""
        (entry,) = await self.append_many([(type, data)], turn=turn, sync=sync)
        return entry

    @property
    def generation(self) -> int:
        """Counts up each time the file was found changed by another hand and read again (see the module
        docstring), and each time ``shrink_cache`` gave entries back: a reader keeping its own copy of entries
        drops it and reads again when this differs from what it saw."""
        return self._generation

    async def append_many(
        self, items: Iterable[tuple[str, Mapping[str, Json]]], *, turn: int | None = None, sync: bool = True
    ) -> list[Entry]:
        """Append ``(type, data)`` pairs as consecutive entries in one write (and at most one fsync).

        ``sync=False`` only writes them (readable at once; a crash of the process loses nothing): the caller
        makes them durable with ``sync(upto=...)`` when the policy asks for it.
        """
        pending = list(items)
        if not pending:
            return []
        async with self._lock:
            self._check_open()
            self._unpark()
            self._check_unchanged()
            entries, lines = self._draft(pending, turn)
            payload = b"".join(lines)
            if len(payload) > _THREAD_WRITE_BYTES:
                await anyio.to_thread.run_sync(self._write, payload)
            else:
                self._write(payload)
            self._remember(entries, lines)
        if sync and (self.fsync == "always" or (self.fsync == "turn" and turn is None)):
            await self.sync()
        return entries

    def _draft(self, items: list[tuple[str, Mapping[str, Json]]], turn: int | None) -> tuple[list[Entry], list[bytes]]:
        ts = self._clock.now()
        entries: list[Entry] = []
        lines: list[bytes] = []
        for index, (type_, data) in enumerate(items):
            line = Entry(self._last_id + 1 + index, type_, ts, data, turn).to_json()
            try:
                encoded = line.encode()
            except UnicodeEncodeError:  # a lone surrogate: stored as U+FFFD rather than failing the append
                line = clean_text(line)
                encoded = line.encode()
            entries.append(Entry.from_json(line))
            lines.append(encoded + b"\n")
        return entries, lines

    async def wait_appended(self, after_id: int) -> None:
        """Return once the log holds an entry newer than ``after_id`` (at once if it does), or once it is
        closed; written, not necessarily durable yet (``sync(upto=...)`` waits for that)."""
        await self._followers.wait(lambda: self._last_id > after_id or self._closed)

    def _wake_followers(self) -> None:
        self._followers.wake()

    def _write(self, payload: bytes) -> None:
        try:
            _logfile.write_all(self._fd, payload)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                self._closed = True  # a half-written line we cannot remove: refuse further appends
            raise FactLogError(f"cannot append to fact log {self.path}: {exc.strerror or exc}") from exc

    def _remember(self, entries: list[Entry], lines: list[bytes]) -> None:
        offset = self._size
        for entry, line in zip(entries, lines, strict=True):
            if self._limit:
                self._cache.append((offset, entry))
                if len(self._cache) > self._limit:
                    self._cache.popleft()
                    self._floor = self._cache[0][0]
            offset += len(line)
        self._size = offset
        self._last_id = entries[-1].id
        if not self._limit:
            self._floor = self._size
        self._wake_followers()

    async def sync(self, *, upto: int | None = None) -> None:
        """Make every entry appended so far durable (a no-op under ``never`` or when nothing is pending).

        With ``upto``, return as soon as the entries up to that id are durable: an fsync under way that covers
        them is waited for, not repeated for entries appended since. Concurrent callers share one fsync (group
        commit); the fsync runs in a worker thread.
        """
        if self.fsync == "never" or self._synced[0] >= self._size:
            return
        if upto is not None and self._synced[1] >= upto:
            return
        async with self._sync_lock:
            target = (self._size, self._last_id)
            if self._synced[0] >= target[0] or self._closed:
                return
            if upto is not None and self._synced[1] >= upto:
                return
            try:
                await anyio.to_thread.run_sync(self._syncer, self._fd)
            except OSError as exc:
                raise FactLogError(f"cannot fsync fact log {self.path}: {exc.strerror or exc}") from exc
            self.stats.syncs += 1
            self._synced = target

    def _check_open(self) -> None:
        if self._closed:
            raise FactLogError(f"fact log {self.path} is closed")

    def _check_unchanged(self) -> None:
        """Read the file again if another hand changed its size (see the module docstring).

        Readers skip the check while an append holds the lock (its write may be under way in a worker
        thread); that append checks before it writes.
        """
        try:
            size = os.fstat(self._fd).st_size
        except OSError as exc:
            raise FactLogError(f"cannot read fact log {self.path}: {exc.strerror or exc}") from exc
        if size != self._size:
            self._reload(size)

    def _check_reader(self) -> None:
        if not self._lock.locked():
            self._check_unchanged()

    def _check_same_file(self) -> None:
        """Refuse a log whose path now names another file (replaced by an editor, or removed)."""
        try:
            inode = os.fstat(self._fd).st_ino
        except OSError:
            inode = -1
        self._check_same_file_as(inode)

    def _check_same_file_as(self, inode: int) -> None:
        try:
            same = os.stat(self.path).st_ino == inode
        except OSError:
            same = False
        if not same:
            raise FactLogError(
                f"fact log {self.path} was replaced or removed while the host had it open; the host keeps no "
                "copy of what it held: stop the host, put the file back, and start it again"
            )

    def _reload(self, size: int) -> None:
        self._warn(
            f"fact log {self.path} changed under the running host ({size} bytes, {self._size} expected): "
            "it is read again from the file"
        )
        with self._reading():
            torn = _logfile.set_aside_torn_tail(self._fd, self.path, self.stats, _log_warning)
            self._size = os.fstat(self._fd).st_size
        if torn:
            self.warnings.append(torn)
        self._cache.clear()
        self._bad_offsets.clear()
        self._limit = self._base
        with self._reading():
            self._load_tail()
        self._generation += 1

    def shrink_cache(self, keep: int = 0) -> int:
        """Forget all but the newest ``keep`` cached entries; returns how many were dropped.

        Reads stay correct: what is no longer cached is read from the file (``read_back`` does that in a
        worker thread), and appends fill the cache again. An idle runtime's log gives its recent entries
        back this way (they are most of what an idle runtime holds), and the ``on_shrink`` callbacks are
        called so that copies kept elsewhere go too.
        """
        if keep < 0:
            raise ValueError(f"keep must be >= 0; got {keep}")
        dropped = 0
        while len(self._cache) > keep:
            self._cache.popleft()
            dropped += 1
        if dropped:
            self._floor = self._cache[0][0] if self._cache else self._size
            self._generation += 1  # readers keeping their own copy read again
        self._limit = max(self._base, keep)
        for callback in self._on_shrink:
            callback()
        return dropped

    def on_shrink(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` each time ``shrink_cache`` runs (an idle runtime cooling), so a reader that keeps
        its own copy of entries (a context engine's window) gives it back too."""
        self._on_shrink.append(callback)

    @property
    def cached(self) -> int:
        """How many of the newest entries are held in memory."""
        return len(self._cache)

    # -- reading ---------------------------------------------------------------------------------------

    def tail(self, n: int) -> list[Entry]:
        """The last ``n`` entries, oldest first. Reads only what it needs, from the cache first."""
        if n <= 0:
            return []
        newest_first = list(islice(self.iter_reverse(), n))
        newest_first.reverse()
        return newest_first

    def iter_reverse(self) -> Iterator[Entry]:
        """Entries newest first: the cache, then the file backwards in blocks. Sees entries present now.

        Consume it before closing the log (``read_back`` does that for you, off the event loop).
        """
        self._check_open()
        self._unpark()
        self._check_reader()
        cached, floor = tuple(self._cache), self._floor
        return self._reverse(cached, floor)

    def _reverse(
        self, cached: tuple[tuple[int, Entry], ...], floor: int, read: list[tuple[int, Entry]] | None = None
    ) -> Iterator[Entry]:
        """The cached entries, then the file's below ``floor``, newest first; ``read`` collects the latter."""
        for _, entry in reversed(cached):
            yield entry
        with self._reading():
            for offset, line in _logfile.iter_lines_reverse(self._fd, floor, self.stats):
                parsed = self._parse(offset, line)
                if parsed is not None:
                    if read is not None:
                        read.append((offset, parsed))
                    yield parsed

    def iter_forward(self, *, after_id: int = 0) -> Iterator[Entry]:
        """Entries oldest first, from the start of the file (those with ``id > after_id``). Reads the whole file."""
        self._check_open()
        self._unpark()
        self._check_reader()
        return self._forward(self._size, after_id)

    def _forward(self, end: int, after_id: int) -> Iterator[Entry]:
        with self._reading():
            for offset, line in _logfile.iter_lines_forward(self._fd, end, self.stats):
                entry = self._parse(offset, line)
                if entry is not None and entry.id > after_id:
                    yield entry

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Turn an OS error of a read (the log closed under a reader, a failing disk) into ``FactLogError``."""
        try:
            yield
        except OSError as exc:
            raise FactLogError(f"cannot read fact log {self.path}: {exc.strerror or exc}") from exc

    async def read_back(self, select: Callable[[Iterator[Entry]], T]) -> T:
        """Run ``select`` over the entries newest first and return its result.

        ``select`` consumes as many entries as it needs. While they come from the cache it runs right here;
        if it reads past the cache it is run again from the start in a worker thread, where the disk reads
        cannot stall the event loop. So ``select`` must be a pure function of the entries it sees. What it
        read from the file goes into the cache, which grows to hold it (up to ``max_cache_bytes``), so the
        next read of the same window stays on the event loop.
        """
        self._check_open()
        self._unpark()
        self._check_same_file()
        self._check_reader()
        cached, floor = tuple(self._cache), self._floor
        exhausted = False

        def from_cache() -> Iterator[Entry]:
            nonlocal exhausted
            for _, entry in reversed(cached):
                yield entry
            exhausted = True

        result = select(from_cache())
        if not exhausted or floor == 0:
            return result
        read: list[tuple[int, Entry]] = []  # from the file, newest first
        self._thread_reads += 1
        try:
            result = await anyio.to_thread.run_sync(select, self._reverse(cached, floor, read))
        finally:
            self._thread_reads -= 1
            if not self._thread_reads:
                self._reads_done.set()
                self._reads_done = anyio.Event()
        self._warm(read, floor)
        return result

    def _warm(self, read: list[tuple[int, Entry]], floor: int) -> None:
        """Put entries just read from below ``floor`` (newest first) into the cache, if it still starts at
        ``floor`` (nothing rotated it or shrank it meanwhile), growing it to hold them within ``max_cache_bytes``
        of the file, with room for ``cache_size`` more: a window that grows by a few entries a step does not
        fall out of it at every step."""
        if self._floor != floor or self._closed or not read or not self._base:
            return
        taken = 0
        for offset, entry in read:
            if self._size - offset > self._max_cache_bytes:
                break
            self._cache.appendleft((offset, entry))
            taken += 1
        if taken:
            self._floor = self._cache[0][0]
            self._limit = max(self._limit, len(self._cache) + self._base)

    def _parse(self, offset: int, line: bytes) -> Entry | None:
        if not line.strip():
            return None
        self.stats.lines_parsed += 1
        try:
            return Entry.from_json(line)
        except (ValueError, KeyError, TypeError) as exc:
            if offset not in self._bad_offsets:
                self._bad_offsets.add(offset)
                self._warn(f"fact log {self.path}: skipped a bad line at offset {offset}: {exc}")
            return None

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        _log_warning(message)


def _log_warning(message: str) -> None:
    """Log ``message`` as it is (its paths hold ``%``-escapes such as ``%3A``)."""
    logger.warning("%s", message)


def _fsync_dir(directory: Path) -> None:
    """Make a new file's directory entry durable (a crash right after creation keeps the file)."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
