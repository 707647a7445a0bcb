"""Opening the memory database: WAL verified, pragmas set, closed stores refuse calls."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import StoreError
from ishiki_host.store import MemoryStore
from ishiki_host.store.db import BUSY_TIMEOUT_MS, Database, connect, memory_db_files


def test_connect_sets_wal_and_pragmas(db_path: Path) -> None:
    conn = connect(db_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
    finally:
        conn.close()
    # WAL is persistent in the file: another connection sees it without asking.
    other = sqlite3.connect(db_path)
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other.close()


def test_connect_creates_the_data_directory(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "memory.db"
    connect(path).close()
    assert path.is_file()


def test_a_vfs_without_shared_memory_is_refused_not_run_in_another_mode(db_path: Path) -> None:
    with pytest.raises(StoreError, match=r"cannot switch the memory database to WAL mode") as info:
        connect(db_path, vfs="unix-none")
    assert str(db_path) in str(info.value)
    assert "journal_mode='delete'" in str(info.value)


def test_an_empty_file_is_a_new_database(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"")
    conn = connect(db_path)
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
    conn.close()


def test_companion_files() -> None:
    assert [p.name for p in memory_db_files("/x/memory.db")] == ["memory.db", "memory.db-wal", "memory.db-shm"]


@pytest.mark.anyio
async def test_data_survives_reopening(db_path: Path, fake_clock: FakeClock) -> None:
    async with await MemoryStore.open(db_path, clock=fake_clock) as store:
        await store.memories.add("fact", "the cat is called Miso", profile="p", runtime_key="p/main")
    async with await MemoryStore.open(db_path, clock=fake_clock) as store:
        [hit] = await store.memories.search("p", "Miso", trust="owner")
        assert hit.memory.content == "the cat is called Miso"


@pytest.mark.anyio
async def test_a_store_closes_while_another_process_holds_the_write_lock(db_path: Path) -> None:
    """Workers and their supervisor share memory.db and stop at once: the statistics a close writes
    (``PRAGMA optimize``) wait for a later close instead of failing this one."""
    store = await MemoryStore.open(db_path)
    for index in range(300):
        await store.memories.add("fact", f"tea in the garden {index}", profile="p", runtime_key="p/main")
    await store.memories.search("p", "tea", trust="owner")
    other = sqlite3.connect(db_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # as another process's write would
        await store.aclose()
    finally:
        other.close()
    assert store.db.closed


@pytest.mark.anyio
async def test_a_closed_store_refuses_calls_and_closing_twice_is_fine(db_path: Path) -> None:
    store = await MemoryStore.open(db_path)
    await store.aclose()
    await store.aclose()
    assert store.db.closed
    with pytest.raises(StoreError, match="closed"):
        await store.memories.count("p")


@pytest.mark.anyio
async def test_calls_queued_before_close_still_run(db_path: Path) -> None:
    db = await Database.open(db_path)
    results: list[int] = []

    async def count() -> None:
        results.append(await db.read(lambda conn: int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])))

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(count)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(db.aclose)
    assert results == [0] * 5
    assert db.closed


@pytest.mark.anyio
async def test_a_failed_write_rolls_back_and_is_a_store_error(store: MemoryStore) -> None:
    def two_inserts(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO plugin_settings (profile, kind, name, enabled, updated_at) VALUES (NULL, 'tool', 'a', 1, 0)"
        )
        conn.execute(
            "INSERT INTO plugin_settings (profile, kind, name, enabled, updated_at) VALUES (NULL, 'nope', 'b', 1, 0)"
        )

    with pytest.raises(StoreError, match="CHECK constraint failed"):
        await store.db.write(two_inserts)
    assert await store.plugin_settings.all() == []


def test_unusable_paths_are_store_errors(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot create the data directory"):
        connect(tmp_path / "file" / "data" / "memory.db")
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(StoreError, match="cannot read the memory database"):
        connect(tmp_path / "dir.db")


def test_without_the_check_a_damaged_file_is_still_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    connect(path).close()
    data = bytearray(path.read_bytes())
    data[100:4096] = bytes(3996)  # wipe the schema page's content
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="ishiki memory clear"):
        connect(path, check=False)
