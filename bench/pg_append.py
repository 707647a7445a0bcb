"""The fact log on PostgreSQL against the file fact log: what an append costs each, durably, on the same disk.

A throwaway PostgreSQL server (its own cluster, fsync on, in a temporary directory on the same disk as the file
logs; reached on its Unix socket) and the file log, each in this process, one runtime's log at a time:

- **a durable append** (an inbound message outside a turn, fsync ``turn``: the file log fsyncs it, PostgreSQL's
  commit waits for its WAL to reach the disk), written one after the other;
- **a turn**: four appends inside a turn, then ``sync`` (the file log: four writes and one fsync; PostgreSQL: four
  commits that do not wait, then one that does);
- **the newest 100 entries of 10,000**, read with no cache (the file: backwards in blocks; PostgreSQL: one page
  on the primary key, newest first).

Each PostgreSQL write runs under the runtime's lease (``LeaseBook.fenced``: the lease's row checked and share-
locked in the same transaction), as a fleet of hosts writes. Figures: each PostgreSQL time against the file log's,
same run.

    .venv/bin/python bench/pg_append.py [--quick] [--runs N] [--json PATH] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from _report import Bench, run
from psycopg_pool import AsyncConnectionPool

from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.store.pg.facts import PgFactLog
from ishiki_host.store.pg.leases import Lease, LeaseBook
from ishiki_host.testing.postgres import PostgresServer

MESSAGE = {
    "role": "user",
    "parts": [{"type": "text", "text": "a chat message of ordinary length, about one line of text or so " * 2}],
    "source": {"platform": "console", "selfId": "local", "channelId": "private:local", "messageId": "1"},
}
DEEP = 10_000


WHAT = {"append": "a durable append", "turn": "a turn (4 appends, one sync)",
        "read": "newest 100 of 10,000 entries, no cache"}  # fmt: skip


class Log:
    """The writing half of one runtime's log of either kind, for ``measure_log``."""

    def __init__(self, append: Callable[..., Awaitable[Any]], many: Callable[..., Awaitable[Any]],
                 sync: Callable[[], Awaitable[None]]):  # fmt: skip
        self.append, self.many, self.sync = append, many, sync


def newest_100(entries: Iterator[Entry]) -> list[Entry]:
    return list(islice(entries, 100))


async def per_call(action: Callable[[], Awaitable[object]], calls: int) -> float:
    """Seconds per call of ``action``, over ``calls`` calls one after the other."""
    start = time.perf_counter()
    for _ in range(calls):
        await action()
    return (time.perf_counter() - start) / calls


async def measure_log(log: Log, calls: int) -> tuple[float, float]:
    """A durable append and a turn, each in seconds per call."""
    append = await per_call(lambda: log.append("message", MESSAGE), calls)

    async def turn() -> None:
        await log.many([("message", MESSAGE)] * 4, turn=1, sync=False)
        await log.sync()

    return append, await per_call(turn, calls)


async def measure(bench: Bench) -> None:
    """Both logs per run, back to back (paired)."""
    runs = bench.runs(quick=1, full=5)
    calls = 50 if bench.quick else 200
    bench.note(f"{runs} run(s) of {calls} appends and {calls} turns each; reads of {DEEP:,}-entry logs")
    results: dict[str, list[float]] = {f"{kind} {what}": [] for kind in ("pg", "file") for what in WHAT}
    with tempfile.TemporaryDirectory(dir=bench.args.dir) as base:
        os.chmod(base, 0o755)  # run as root, the server runs as postgres: it must reach its cluster in here
        with PostgresServer(parent=Path(base), durable=True) as server:
            pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                server.create_database("bench"), min_size=2, open=False, kwargs={"autocommit": True}
            )
            await pool.open(wait=True)
            try:
                book = LeaseBook(pool, "bench", seconds=600)
                await book.setup()
                await PgFactLog.setup(book)
                for index in range(runs):
                    await one_run(book, Path(base) / f"run{index}", calls, results)
            finally:
                await pool.close()
    for what, label in WHAT.items():
        bench.add(f"{label}, PostgreSQL", "s", results[f"pg {what}"], baseline=f"{label}, file log",
                  baseline_samples=results[f"file {what}"], paired=True)  # fmt: skip


async def one_run(book: LeaseBook, directory: Path, calls: int, results: dict[str, list[float]]) -> None:
    """Each measure on a new log of each kind."""
    os.mkdir(directory)
    key = f"ana/bench/{directory.name}"
    pg_log = await PgFactLog.open(book, await leased(book, key), key)
    pg_append, pg_turn = await measure_log(Log(pg_log.append, pg_log.append_many, pg_log.sync), calls)
    async with await FactLog.open(directory / "facts.jsonl", fsync="turn") as file_log:
        file_append, file_turn = await measure_log(Log(file_log.append, file_log.append_many, file_log.sync), calls)
    deep_pg = await PgFactLog.open(book, await leased(book, f"{key}/deep"), f"{key}/deep", fsync="never",
                                   cache_size=0)  # fmt: skip
    async with await FactLog.open(directory / "deep.jsonl", fsync="never", cache_size=0) as deep_file:
        for _ in range(DEEP // 500):
            await deep_pg.append_many([("message", MESSAGE)] * 500, turn=1)
            await deep_file.append_many([("message", MESSAGE)] * 500, turn=1)
        file_read = await per_call(lambda: deep_file.read_back(newest_100), 20)
        pg_read = await per_call(lambda: deep_pg.read_back(newest_100), 20)
    for name, value in (("pg append", pg_append), ("file append", file_append), ("pg turn", pg_turn),
                        ("file turn", file_turn), ("pg read", pg_read), ("file read", file_read)):  # fmt: skip
        results[name].append(value)


async def leased(book: LeaseBook, key: str) -> Lease:
    """The bench's lease on runtime ``key``."""
    lease = await book.acquire(f"runtime:{key}")
    assert lease is not None
    return lease


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own options."""
    parser.add_argument("--dir", default=None, help="where the file logs and the server's cluster go (a disk)")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
