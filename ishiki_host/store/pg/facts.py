"""A runtime's fact log in PostgreSQL, written only under the runtime's lease: the file log's contract on a database.

    log = await PgFactLog.open(book, lease, "ana/telegram:1/private:42", fsync="turn")
    entry = await log.append("message", {...})              # durable when it returns (outside a turn)
    await log.append_many(steps, turn=3, sync=False)       # committed, readable at once; durable at ``sync``
    await log.sync()
    window = await log.read_back(select)                    # newest first, O(what select reads)

Each entry is a row of ``ishiki_facts``: the runtime key, the entry's id and its JSONL line exactly as the file log
writes it (``Entry.to_json``), so an entry reads back the same from either, and moving a data directory to
PostgreSQL copies lines. The primary key ``(runtime_key, id)`` serves the newest-first reads and makes a second
writer's entry with an id already taken fail rather than interleave; a batch is one transaction, so a torn
write cannot exist.

Every append is one statement that checks the runtime's lease as ``LeaseBook.fenced`` does (holder, token, not
expired; the lease's row share-locked until the commit, so a takeover waits for it) and writes its rows only
when it holds: a host that lost the lease gets ``LeaseLost`` and wrote nothing. One statement is one round trip
and one transaction, so no transaction of a paused host can hold the lease's row. Durability follows the fsync
policy, with PostgreSQL's commit as the fsync:

- ``always``: every append's commit waits for the WAL to reach the disk;
- ``turn`` (default): appends outside a turn (inbound messages, which a channel confirms only once durable) wait
  for the disk; appends inside a turn commit without waiting (``synchronous_commit`` off for that transaction:
  a crash of the host loses nothing, one of the database server may lose the last ones), and ``sync()`` makes
  them durable with one waiting commit (of the log's mark in ``ishiki_fact_marks``): the WAL is one sequence, so
  its flush covers every commit before it;
- ``never``: no commit waits.

``open`` and ``close`` make what is there durable with that waiting commit (unless ``never``), as the file log
fsyncs on both: it is fenced too, so a log whose lease is gone refuses them with ``LeaseLost``.

Reads start from a cache of the newest entries; ``read_back`` runs ``select`` there and, when it reads past the
cache, fetches older pages newest-first (each twice the size of the last) and runs it again from the start, so
``select`` must be a pure function of what it sees, as for the file log. As there, what ``select`` read past the
cache goes into it, which grows to hold the window (up to ``max_cache_bytes`` of the entries' lines);
``shrink_cache`` gives it back (``generation``, ``on_shrink``). The log satisfies ``FactLogProtocol``
(``ishiki_host.core.factlog_contract``), and ``tests/store/test_factlog_contract.py`` holds it to that.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

import anyio
import psycopg

from ishiki_host.core.clock import Clock, SystemClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import MAX_CACHE_BYTES, FsyncPolicy
from ishiki_host.core.followers import Followers
from ishiki_host.core.text import clean_text
from ishiki_host.errors import FactLogError
from ishiki_host.jsontypes import Json
from ishiki_host.store.pg.leases import Lease, LeaseBook, LeaseLost
from ishiki_host.store.pg.schema import migrate

__all__ = ["PgFactLog"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

_HELD = """
held AS (
    SELECT 1 FROM ishiki_leases
    WHERE name = %(lease)s AND holder = %(holder)s AND token = %(token)s AND expires_at > clock_timestamp()
    FOR SHARE
),
commit_mode AS (SELECT set_config('synchronous_commit', %(commit)s, true))
"""
# One statement, so one round trip and its own transaction: the lease checked (and its row share-locked, as in
# ``LeaseBook.fenced``) with the rows written, none of them when the lease is not held; and whether its commit
# waits for the disk, set for that transaction alone.
_INSERT = (
    "WITH " + _HELD + "INSERT INTO ishiki_facts (runtime_key, id, line) "
    "SELECT %(key)s, entry.id, entry.line FROM held, commit_mode, "
    "unnest(%(ids)s::bigint[], %(lines)s::text[]) AS entry(id, line)"
)
_MARK = (
    "WITH " + _HELD + "INSERT INTO ishiki_fact_marks (runtime_key, durable_id) "
    "SELECT %(key)s, %(upto)s FROM held, commit_mode "
    "ON CONFLICT (runtime_key) DO UPDATE SET durable_id = GREATEST(ishiki_fact_marks.durable_id, EXCLUDED.durable_id)"
)
_PAGE = "SELECT id, line FROM ishiki_facts WHERE runtime_key = %s AND id < %s ORDER BY id DESC LIMIT %s"
_FIRST_PAGE = 256


class _NeedMore(Exception):
    """``select`` read past the entries fetched so far (``read_back`` fetches more and runs it again)."""


class PgFactLog:
    """One runtime's log (see the module docstring); made by ``open``."""

    def __init__(
        self,
        book: LeaseBook,
        lease: Lease,
        key: str,
        fsync: FsyncPolicy,
        clock: Clock,
        cache_size: int,
        max_cache_bytes: int = MAX_CACHE_BYTES,
    ):
        self.book = book
        self.lease = lease
        self.key = key
        self.fsync: FsyncPolicy = fsync
        self._clock = clock
        self._cache: deque[tuple[Entry, int]] = deque()  # the newest entries, oldest first, with their lines' size
        self._base = cache_size  # the cache's size when no window needs more (and after shrink_cache)
        self._limit = cache_size  # grows to hold what read_back reads: see _warm
        self._max_cache_bytes = max_cache_bytes
        self._generation = 0
        self._on_shrink: list[Callable[[], None]] = []
        self._on_close: list[Callable[[], Awaitable[None]]] = []
        self._last_id = 0
        self._durable_id = 0
        self._lock = anyio.Lock()
        self._sync_lock = anyio.Lock()
        self._followers = Followers()  # readers waiting in wait_appended
        self._closed = False
        self.lost = False  # a write was refused for want of the lease: the log ended with it, not by ``close``

    @classmethod
    async def open(
        cls,
        book: LeaseBook,
        lease: Lease,
        key: str,
        *,
        fsync: FsyncPolicy = "turn",
        clock: Clock | None = None,
        cache_size: int = 256,
        max_cache_bytes: int = MAX_CACHE_BYTES,
    ) -> PgFactLog:
        """The log of runtime ``key``, written under ``lease`` (made where missing: ``setup`` first).

        What an earlier writer committed without waiting for the disk is made durable here (unless ``never``),
        as the file log fsyncs what an earlier writer left; ``LeaseLost`` when ``lease`` is not held.
        """
        if fsync not in ("always", "turn", "never"):
            raise ValueError(f"fsync policy must be one of always, turn, never; got {fsync!r}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0; got {cache_size}")
        if max_cache_bytes < 1:
            raise ValueError(f"max_cache_bytes must be >= 1; got {max_cache_bytes}")
        log = cls(book, lease, key, fsync, clock or SystemClock(), cache_size, max_cache_bytes)
        newest = await log._page(before=None, size=max(cache_size, 1))
        log._last_id = newest[0][0].id if newest else 0
        log._cache.extend(reversed(newest[:cache_size]))
        if fsync == "never":
            log._durable_id = log._last_id
        else:
            await log.sync()
        return log

    @staticmethod
    async def setup(book: LeaseBook) -> None:
        """Bring the database to the fleet's schema (``schema.migrate``: the log's tables among the rest)."""
        await migrate(book.pool)

    @property
    def where(self) -> str:
        """Where the log lives, for messages."""
        return f"PostgreSQL fact log of {self.key}"

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called (or a lost lease closed it)."""
        return self._closed

    @property
    def last_id(self) -> int:
        """The id of the newest entry (0 for an empty log)."""
        return self._last_id

    @property
    def durable_id(self) -> int:
        """The id of the newest entry known to be on the database's disk."""
        return self._durable_id

    @property
    def generation(self) -> int:
        """Counts up each time ``shrink_cache`` gave entries back: a reader keeping its own copy of entries drops
        it and reads again when this differs from what it saw. (No other hand edits the table: nothing else
        counts it up.)"""
        return self._generation

    @property
    def cached(self) -> int:
        """How many of the newest entries are held in memory."""
        return len(self._cache)

    async def close(self) -> None:
        """Make what was appended durable (unless ``never``); then no more appends or reads, and followers
        waiting in ``wait_appended`` return, and the ``on_close`` callbacks run. Idempotent; closed even when that
        last commit fails (raised after).

        A lease lost by then is said in the log and not raised: every append was committed when it returned,
        so only a crash of the database server could lose what its last waiting commit would have covered, and
        the host that took the runtime over makes it durable when it opens the log."""
        with anyio.CancelScope(shield=True):
            try:
                async with self._lock:
                    if self._closed:
                        return
                    try:
                        await self.sync()
                    except LeaseLost as exc:
                        self.lost = True
                        logger.info("%s closed without its last durable commit: %s", self.where, exc)
                    finally:
                        self._shut()
            finally:
                callbacks, self._on_close = self._on_close, []
                for callback in callbacks:
                    try:
                        await callback()
                    except Exception:
                        logger.exception("a close callback of %s failed", self.where)

    def _shut(self) -> None:
        self._closed = True
        self._wake_followers()

    # -- writing ---------------------------------------------------------------------------------------

    async def append(self, type: str, data: Mapping[str, Json], *, turn: int | None = None, sync: bool = True) -> Entry:
        """Append one entry; returns it as stored."""
        (entry,) = await self.append_many([(type, data)], turn=turn, sync=sync)
        return entry

    async def append_many(
        self, items: Iterable[tuple[str, Mapping[str, Json]]], *, turn: int | None = None, sync: bool = True
    ) -> list[Entry]:
        """Append ``(type, data)`` pairs as consecutive entries in one transaction (see the module docstring for
        when its commit waits for the disk); ``LeaseLost`` when the runtime's lease is no longer this host's."""
        pending = list(items)
        if not pending:
            return []
        durable = sync and (self.fsync == "always" or (self.fsync == "turn" and turn is None))
        async with self._lock:
            self._check_open()
            entries, lines = self._draft(pending, turn)
            params = self._params(commit="on" if durable else "off")
            params.update(ids=[e.id for e in entries], lines=lines)
            if await self._write(_INSERT, params, "append to") != len(entries):
                self.lost = True
                self._shut()  # another host serves the runtime now: nothing more is written here
                raise LeaseLost(f"the lease on {self.lease.name!r} (token {self.lease.token}) is no longer "
                                f"{self.lease.holder}'s: nothing of {self.key} was written")  # fmt: skip
            self._last_id = entries[-1].id
            if durable:
                self._durable_id = self._last_id
            self._remember(entries, lines)
            self._wake_followers()
        return entries

    def _draft(self, items: list[tuple[str, Mapping[str, Json]]], turn: int | None) -> tuple[list[Entry], list[str]]:
        ts = self._clock.now()
        entries, lines = [], []
        for index, (type_, data) in enumerate(items):
            line = Entry(self._last_id + 1 + index, type_, ts, data, turn).to_json()
            try:
                line.encode()
            except UnicodeEncodeError:  # a lone surrogate: stored as U+FFFD rather than failing the append
                line = clean_text(line)
            entries.append(Entry.from_json(line))
            lines.append(line)
        return entries, lines

    def _remember(self, entries: list[Entry], lines: list[str]) -> None:
        if not self._limit:
            return
        for entry, line in zip(entries, lines, strict=True):
            self._cache.append((entry, len(line.encode())))
        while len(self._cache) > self._limit:
            self._cache.popleft()

    async def sync(self, *, upto: int | None = None) -> None:
        """Make every entry appended so far durable (``upto``: return once those up to that id are); concurrent
        callers share one waiting commit. A no-op under ``never`` and once closed."""
        if self.fsync == "never" or self._closed:
            return
        async with self._sync_lock:
            target = self._last_id
            if self._closed or self._durable_id >= (target if upto is None else min(upto, target)):
                return
            if await self._write(_MARK, {**self._params(commit="on"), "upto": target}, "make durable") != 1:
                self.lost = True
                self._shut()
                raise LeaseLost(f"the lease on {self.lease.name!r} is no longer {self.lease.holder}'s")
            self._durable_id = max(self._durable_id, target)

    def _params(self, *, commit: str) -> dict[str, object]:
        lease = self.lease
        return {"lease": lease.name, "holder": lease.holder, "token": lease.token, "commit": commit, "key": self.key}

    async def _write(self, sql: str, params: dict[str, object], what: str) -> int:
        """Run one writing statement; how many rows it wrote (none: the lease is not held)."""
        try:
            async with self.book.pool.connection() as conn:
                cursor = await conn.execute(sql, params)
                return int(cursor.rowcount)
        except psycopg.Error as exc:
            raise FactLogError(f"cannot {what} the fact log of {self.key}: {exc}") from exc

    def _check_open(self) -> None:
        if self._closed:
            raise FactLogError(f"fact log of {self.key} is closed")

    # -- the cache -------------------------------------------------------------------------------------

    def shrink_cache(self, keep: int = 0) -> int:
        """Forget all but the newest ``keep`` cached entries; returns how many were dropped. Reads stay correct
        (what is no longer cached is fetched again); the ``on_shrink`` callbacks are called, as ``FactLog``'s."""
        if keep < 0:
            raise ValueError(f"keep must be >= 0; got {keep}")
        dropped = 0
        while len(self._cache) > keep:
            self._cache.popleft()
            dropped += 1
        if dropped:
            self._generation += 1  # readers keeping their own copy read again
        self._limit = max(self._base, keep)
        for callback in self._on_shrink:
            callback()
        return dropped

    def on_shrink(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` each time ``shrink_cache`` runs (an idle runtime cooling)."""
        self._on_shrink.append(callback)

    def on_close(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Await ``callback()`` once the log is closed (the fleet gives the runtime's lease up there)."""
        self._on_close.append(callback)

    async def park(self) -> bool:
        """Nothing to give back: the log holds a pooled connection only while it reads or writes."""
        return False

    def _warm(self, older: list[tuple[Entry, int]], generation: int) -> None:
        """Put entries fetched past the cache (newest first) into it, if they still join its oldest end (nothing
        shrank it meanwhile), growing it to hold them within ``max_cache_bytes``, with room for ``cache_size``
        more, as ``FactLog`` does."""
        if self._generation != generation or self._closed or not older or not self._base:
            return
        joins = self._cache[0][0].id if self._cache else self._last_id + 1
        if older[0][0].id + 1 != joins:
            return
        held = sum(size for _, size in self._cache)
        taken = 0
        for entry, size in older:
            held += size
            if held > self._max_cache_bytes:
                break
            self._cache.appendleft((entry, size))
            taken += 1
        if taken:
            self._limit = max(self._limit, len(self._cache) + self._base)

    # -- reading ---------------------------------------------------------------------------------------

    async def wait_appended(self, after_id: int) -> None:
        """Return once the log holds an entry newer than ``after_id`` (at once if it does), or once closed."""
        await self._followers.wait(lambda: self._last_id > after_id or self._closed)

    def _wake_followers(self) -> None:
        self._followers.wake()

    def tail(self, n: int) -> list[Entry]:
        """The last ``n`` entries the cache holds (at most ``cached``), oldest first; ``read_back`` reads further."""
        return [entry for entry, _ in self._cache][-n:] if n > 0 else []

    async def read_back(self, select: Callable[[Iterator[Entry]], T]) -> T:
        """Run ``select`` over the entries newest first and return its result (see the module docstring)."""
        self._check_open()
        cached = [entry for entry, _ in reversed(self._cache)]
        generation, below = self._generation, self._last_id + 1  # the table is read under the newest id fetched
        complete = (cached[-1].id if cached else below) <= 1
        older: list[tuple[Entry, int]] = []
        size, read = _FIRST_PAGE, 0

        def newest_first(fetched: list[Entry], complete: bool) -> Iterator[Entry]:
            nonlocal read
            for entry in fetched:
                read += 1
                yield entry
            if not complete:
                raise _NeedMore

        while True:
            fetched, read = cached + [entry for entry, _ in older], 0
            try:
                result = select(newest_first(fetched, complete))
            except _NeedMore:
                page = await self._page(before=fetched[-1].id if fetched else below, size=size)
                older.extend(page)
                complete = len(page) < size or page[-1][0].id <= 1
                size *= 2
                continue
            self._warm(older[: max(read - len(cached), 0)], generation)  # what select read past the cache
            return result

    async def _page(self, *, before: int | None, size: int) -> list[tuple[Entry, int]]:
        """Up to ``size`` entries with ids below ``before`` (all: ``None``), newest first, with their lines' size."""
        try:
            async with self.book.pool.connection() as conn:
                cursor = await conn.execute(_PAGE, (self.key, before if before is not None else 2**62, size))
                rows = await cursor.fetchall()
        except psycopg.Error as exc:
            raise FactLogError(f"cannot read the fact log of {self.key}: {exc}") from exc
        return [(Entry.from_json(line), len(line.encode())) for _, line in rows]


if TYPE_CHECKING:
    from ishiki_host.core.factlog_contract import FactLogProtocol

    def _holds_to_the_contract(log: PgFactLog) -> FactLogProtocol:  # mypy checks PgFactLog against it here
        return log
