"""A damaged memory.db is refused with a clear error and a hint, and never modified or deleted."""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import pytest

from ishiki_host.errors import StoreError
from ishiki_host.store import MemoryStore
from ishiki_host.store.db import connect, memory_db_files


def _filled_database(path: Path, rows: int = 2000) -> None:
    conn = connect(path)
    conn.executemany(
        "INSERT INTO memories (type, content, search_text, profile, runtime_key, created_at) "
        "VALUES ('fact', ?, ?, 'p', 'p/main', 0)",
        [(f"memory number {i} " * 8, f"memory number {i} " * 8) for i in range(rows)],
    )
    conn.close()
    assert not memory_db_files(path)[1].exists()  # closing checkpointed the WAL into the file


def _refused(path: Path, pattern: str) -> str:
    before = path.read_bytes()
    with pytest.raises(StoreError, match=pattern) as info:
        connect(path)
    message = str(info.value)
    assert str(path) in message
    assert "ishiki memory clear" in message
    assert path.read_bytes() == before
    assert [p.exists() for p in memory_db_files(path)] == [True, False, False]
    return message


def test_random_bytes_are_refused_untouched(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(random.Random(7).randbytes(8192))
    _refused(db_path, "not an SQLite database")


def test_a_file_shorter_than_the_header_is_refused(db_path: Path) -> None:
    _filled_database(db_path)
    db_path.write_bytes(db_path.read_bytes()[:10])
    _refused(db_path, "truncated SQLite database")


def test_a_truncated_database_is_refused_untouched(db_path: Path) -> None:
    _filled_database(db_path)
    data = db_path.read_bytes()
    db_path.write_bytes(data[: len(data) // 2])
    _refused(db_path, "corrupt|integrity check")


def test_damaged_pages_fail_the_quick_check(db_path: Path) -> None:
    _filled_database(db_path)
    data = bytearray(db_path.read_bytes())
    page = 4096
    for start in range(3 * page, len(data) - page, 5 * page):
        data[start + 8 : start + 64] = random.Random(start).randbytes(56)
    db_path.write_bytes(bytes(data))
    _refused(db_path, "corrupt|integrity check")


@pytest.mark.anyio
async def test_the_store_refuses_it_too(db_path: Path) -> None:
    text = b"this is not a database, just a text file that happens to be here\n" * 10
    await anyio.Path(db_path.parent).mkdir(parents=True)
    await anyio.Path(db_path).write_bytes(text)
    with pytest.raises(StoreError, match="move it aside"):
        await MemoryStore.open(db_path)
    assert await anyio.Path(db_path).read_bytes() == text
