"""One fact-log contract (``FactLogProtocol``), two stores: every test runs against the file log (``FactLog``) and
the PostgreSQL one (``PgFactLog``, under its runtime's lease, on a real server). What only one of them does stays
in its own tests (``tests/core/test_factlog*.py``; ``pg/test_pg_facts.py``: the lease)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

import anyio
import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog, FsyncPolicy
from ishiki_host.core.factlog_contract import FactLogProtocol
from ishiki_host.errors import FactLogError
from ishiki_host.store.pg.facts import PgFactLog
from ishiki_host.store.pg.leases import LeaseBook

pytestmark = pytest.mark.anyio

KEY = "ana/telegram:1/private:42"
HANG = 10.0


class Opener(Protocol):
    async def __call__(self, *, fsync: FsyncPolicy = "turn", cache_size: int = 256) -> FactLogProtocol: ...


@pytest.fixture(params=["file", "postgresql"])
async def open_log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens the one log of a runtime, again and again (close it before opening it again); all closed at the end."""
    opened: list[FactLogProtocol] = []
    pool: AsyncConnectionPool[Any] | None = None
    book: LeaseBook | None = None
    lease = None
    if request.param == "postgresql":
        url: str = request.getfixturevalue("postgres_url")
        pool = AsyncConnectionPool(url, min_size=1, max_size=4, open=False, kwargs={"autocommit": True})
        await pool.open(wait=True)
        book = LeaseBook(pool, "host-a", seconds=60)
        await book.setup()
        await PgFactLog.setup(book)
        lease = await book.acquire(f"runtime:{KEY}")
        assert lease is not None

    async def open_one(*, fsync: FsyncPolicy = "turn", cache_size: int = 256) -> FactLogProtocol:
        log: FactLogProtocol  # mypy: each store's log is what the contract asks for
        if book is None:
            log = await FactLog.open(tmp_path / "facts.jsonl", fsync=fsync, clock=FakeClock(), cache_size=cache_size)
        else:
            assert lease is not None
            log = await PgFactLog.open(book, lease, KEY, fsync=fsync, clock=FakeClock(), cache_size=cache_size)
        opened.append(log)
        return log

    try:
        yield open_one
    finally:
        for log in opened:
            await log.close()
        if pool is not None:
            await pool.close()


def newest(n: int | None = None) -> Any:
    """A selector: the newest ``n`` entries (all: ``None``), newest first."""

    def select(entries: Iterator[Entry]) -> list[Entry]:
        return list(islice(entries, n))

    return select


def events(count: int, start: int = 0) -> list[tuple[str, dict[str, Any]]]:
    return [("event", {"n": n}) for n in range(start, start + count)]


async def test_ids_count_up_from_one_and_entries_come_back_as_written(open_log: Opener) -> None:
    log = await open_log()
    assert (log.last_id, log.durable_id) == (0, 0)
    first = await log.append("message", {"role": "user", "parts": [{"type": "text", "text": "hi \ud83d"}]})
    assert first.id == 1
    assert first.data["parts"] == [{"type": "text", "text": "hi \ufffd"}]  # a lone surrogate stored as U+FFFD
    batch = await log.append_many(events(3), turn=1)
    assert [(e.id, e.type, e.turn, e.data) for e in batch] == [(n + 2, "event", 1, {"n": n}) for n in range(3)]
    assert await log.append_many([]) == []
    assert log.last_id == 4
    assert await log.read_back(newest()) == [*reversed(batch), first]


async def test_read_back_goes_newest_first_over_the_whole_log_past_its_cache(open_log: Opener) -> None:
    log = await open_log(cache_size=4)
    written = await log.append_many(events(700), turn=1)
    assert log.cached == 4
    assert await log.read_back(newest(3)) == written[-1:-4:-1]
    assert log.cached == 4  # a window inside the cache leaves it as it was
    assert await log.read_back(newest()) == written[::-1]

    def first_even_below(entries: Iterator[Entry]) -> int:
        return next(e.id for e in entries if e.id < 650 and e.id % 2 == 0)  # stops at the first that fits

    assert await log.read_back(first_even_below) == 648


async def test_the_cache_grows_to_hold_the_window_and_shrinks_on_request(open_log: Opener) -> None:
    log = await open_log(cache_size=4)
    written = await log.append_many(events(100), turn=1)
    assert await log.read_back(newest(10)) == written[-1:-11:-1]
    assert log.cached == 10  # what the window read past the cache is kept, for the next step's read
    more = await log.append("event", {"n": "more"})
    assert log.cached == 11  # with room for cache_size more
    shrunk: list[int] = []
    log.on_shrink(lambda: shrunk.append(log.generation))
    before = log.generation
    assert log.shrink_cache(keep=2) == 9
    assert (log.cached, shrunk, log.generation) == (2, [before + 1], before + 1)
    assert log.shrink_cache() == 2
    assert (log.cached, log.generation) == (0, before + 2)
    assert log.shrink_cache() == 0  # nothing to give back: the callbacks run, the generation stays
    assert (shrunk, log.generation) == ([before + 1, before + 2, before + 2], before + 2)
    assert await log.read_back(newest(5)) == [more, *written[-1:-5:-1]]  # read again from the store
    with pytest.raises(ValueError, match="keep must be >= 0"):
        log.shrink_cache(keep=-1)


async def test_turn_policy_makes_inbound_durable_at_once_and_a_turn_at_sync(open_log: Opener) -> None:
    log = await open_log(fsync="turn")
    await log.append("message", {"text": "inbound"})
    assert log.durable_id == 1
    await log.append_many([("message", {"text": "step"}), ("event", {"name": "x"})], turn=1)
    await log.append("message", {"text": "inbound, synced by the caller"}, sync=False)
    assert (log.last_id, log.durable_id) == (4, 1)
    await log.sync(upto=1)
    assert log.durable_id == 1  # already so: nothing to do
    await log.sync(upto=2)
    assert log.durable_id >= 2
    await log.sync()
    assert log.durable_id == 4
    await log.append("event", {"name": "turn.done"}, turn=1)
    await log.close()  # makes it durable
    assert log.durable_id == 5


async def test_always_policy_makes_every_append_durable_unless_told_not_to(open_log: Opener) -> None:
    log = await open_log(fsync="always")
    await log.append("message", {"text": "in a turn"}, turn=1)
    assert log.durable_id == 1
    await log.append("message", {"text": "later"}, turn=1, sync=False)
    assert log.durable_id == 1
    await log.sync()
    assert log.durable_id == 2


async def test_never_policy_leaves_durability_to_the_system(open_log: Opener) -> None:
    log = await open_log(fsync="never")
    await log.append("message", {"text": "inbound"})
    await log.sync()
    await log.close()
    assert (log.last_id, log.durable_id) == (1, 0)


@pytest.mark.parametrize("cache_size", [0, 4, 256])
async def test_a_reopened_log_holds_what_was_written_and_goes_on(open_log: Opener, cache_size: int) -> None:
    log = await open_log()
    written = [await log.append("message", {"text": "inbound"})]
    written += await log.append_many(events(20), turn=1)
    await log.close()
    again = await open_log(cache_size=cache_size)
    assert (again.last_id, again.durable_id) == (21, 21)
    assert again.cached == min(cache_size, 21)
    assert await again.read_back(newest()) == written[::-1]
    assert (await again.append("event", {"n": "after"})).id == 22


async def test_followers_wake_on_an_append_and_on_close(open_log: Opener) -> None:
    log = await open_log()
    await log.append("message", {"text": "one"})
    woken: list[int] = []

    async def follow() -> None:
        await log.wait_appended(1)
        woken.append(log.last_id)

    with anyio.fail_after(HANG):
        await log.wait_appended(0)  # a newer entry is there: at once
        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            tg.start_soon(follow)
            await anyio.wait_all_tasks_blocked()
            assert woken == []
            await log.append("message", {"text": "two"}, sync=False)
        assert woken == [2, 2]
        async with anyio.create_task_group() as tg:
            tg.start_soon(log.wait_appended, 2)
            await anyio.wait_all_tasks_blocked()
            await log.close()  # the follower returns


async def test_close_is_idempotent_and_a_closed_log_refuses_appends_and_reads(open_log: Opener) -> None:
    log = await open_log()
    await log.append("message", {"text": "one"})
    was_closed = log.closed
    await log.close()
    await log.close()
    assert (was_closed, log.closed) == (False, True)
    with pytest.raises(FactLogError, match="closed"):
        await log.append("message", {"text": "two"})
    with pytest.raises(FactLogError, match="closed"):
        await log.read_back(newest(1))
    with anyio.fail_after(HANG):
        await log.wait_appended(5)  # closed: nothing to wait for
    assert log.last_id == 1


async def test_bad_arguments_are_refused_before_anything_is_opened(open_log: Opener) -> None:
    with pytest.raises(ValueError, match="fsync policy must be one of always, turn, never; got 'sometimes'"):
        await open_log(fsync="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cache_size must be >= 0; got -1"):
        await open_log(cache_size=-1)
    log = await open_log()
    assert log.last_id == 0


async def test_a_parked_log_works_on_at_its_next_call(open_log: Opener) -> None:
    log = await open_log()
    await log.append_many(events(3))
    await log.park()  # the file log closes its file; the PostgreSQL one holds nothing to give back
    assert [e.id for e in await log.read_back(newest())] == [3, 2, 1]
    assert (await log.append("event", {"n": 3})).id == 4
    assert log.durable_id == 4
    await log.park()
    await log.close()
    assert await log.park() is False  # a closed log parks nothing
