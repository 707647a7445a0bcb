"""Many async callers, two connections and a second process at once: no "database is locked", no damage."""

from __future__ import annotations

import sqlite3
import sys
import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.store import MemoryStore

pytestmark = pytest.mark.anyio

WRITER = """
import sys, anyio
from ishiki_host.store import MemoryStore

async def main(path, count):
    async with await MemoryStore.open(path) as store:
        async with anyio.create_task_group() as tg:
            for i in range(count):
                tg.start_soon(lambda i=i: store.memories.add("fact", f"from the other process {i}",
                                                              profile="p", runtime_key="other"))

anyio.run(main, sys.argv[1], int(sys.argv[2]))
"""


async def test_many_callers_on_one_store(store: MemoryStore) -> None:
    async def runtime(n: int) -> None:
        key = f"p/console:local/private:{n}"
        session = await store.sessions.ensure(key, start_fact_id=0)
        for i in range(5):
            await store.memories.add("fact", f"note {i} from {n}", profile="p", runtime_key=key, session_id=session.id)
            await store.memories.search("p", f"note {i}", trust="owner", exclude_session_id=session.id)
        await store.plugin_settings.set("tool", f"tool{n % 7}", n % 2 == 0, profile="p")
        await store.sessions.rotate(key, end_fact_id=10, start_fact_id=11, reason="clear")

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for n in range(60):
                tg.start_soon(runtime, n)
    assert await store.memories.count("p") == 300
    assert len(await store.plugin_settings.all(profile="p")) == 7
    assert await store.integrity_problems() == []


async def test_two_connections_write_at_once(db_path: Path, fake_clock: FakeClock) -> None:
    async with (
        await MemoryStore.open(db_path, clock=fake_clock) as one,
        await MemoryStore.open(db_path, clock=fake_clock) as two,
    ):

        async def write(store: MemoryStore, tag: str, i: int) -> None:
            await store.memories.add("fact", f"{tag} {i}", profile="p", runtime_key=tag)
            await store.heartbeats.start_run(f"{tag}-{i}")

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(100):
                    tg.start_soon(write, one, "one", i)
                    tg.start_soon(write, two, "two", i)
        assert await one.memories.count("p") == 200
        assert len(await two.heartbeats.runs("one-7")) == 1
        assert await one.integrity_problems() == []


async def test_another_process_writes_at_the_same_time(db_path: Path) -> None:
    async with await MemoryStore.open(db_path) as store:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: anyio.run_process([sys.executable, "-c", WRITER, str(db_path), "150"]))
                for i in range(150):
                    tg.start_soon(lambda i=i: store.memories.add("fact", f"here {i}", profile="p", runtime_key="here"))
        assert await store.memories.count("p") == 300
        assert len(await store.memories.search("p", "other process", trust="owner", limit=100)) == 100
        assert await store.integrity_problems() == []


async def test_a_cancelled_caller_lets_its_transaction_finish(store: MemoryStore) -> None:
    started, release = threading.Event(), threading.Event()

    def slow_write(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO plugin_settings (profile, kind, name, enabled, updated_at) VALUES (NULL, 'tool', 'a', 1, 0)"
        )
        started.set()
        release.wait(30)
        conn.execute(
            "INSERT INTO plugin_settings (profile, kind, name, enabled, updated_at) VALUES (NULL, 'tool', 'b', 1, 0)"
        )

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()

            async def caller() -> None:
                with scope:
                    await store.db.write(slow_write)

            tg.start_soon(caller)
            await anyio.to_thread.run_sync(started.wait, 30)
            scope.cancel()
            release.set()
    assert scope.cancel_called
    # The worker was not abandoned mid-transaction: both rows are in, and the store still works.
    assert [s.name for s in await store.plugin_settings.all()] == ["a", "b"]
    assert await store.plugin_settings.set("tool", "c", True)
