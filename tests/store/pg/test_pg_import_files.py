"""A data directory's fact logs copied into a real PostgreSQL (``store.pg.import_files``): the lines and ids exactly,
the durable mark, a second run skipped, rows that differ or a lease a host holds refused with nothing written, a
torn tail set aside and not copied."""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.addresses.keys import RuntimeKey, runtime_dir
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.store.pg.facts import PgFactLog
from ishiki_host.store.pg.import_files import import_fact_logs
from ishiki_host.store.pg.leases import LeaseBook

pytestmark = pytest.mark.anyio

CHAT = RuntimeKey.for_channel("ana", "telegram:1", "private:42")
CROSS = RuntimeKey.for_cross("Bob")  # an uppercase id: its directory has a hash suffix


async def write_log(data_dir: Path, key: RuntimeKey, texts: list[str]) -> Path:
    """A file log of ``key`` holding one message per text, as a host writes it."""
    path = runtime_dir(data_dir, key) / "facts.jsonl"
    log = await FactLog.open(path)
    for turn, text in enumerate(texts):
        await log.append("message", {"text": text, "note": "ünïcode ✓"}, turn=turn if turn % 2 else None)
    await log.close()
    return path


def file_rows(path: Path) -> list[tuple[int, str]]:
    return [(Entry.from_json(line).id, line) for line in path.read_text(encoding="utf-8").splitlines()]


async def stored_rows(pool: AsyncConnectionPool[Any], key: RuntimeKey) -> list[tuple[int, str]]:
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT id, line FROM ishiki_facts WHERE runtime_key = %s ORDER BY id", (str(key),))
        return [(int(i), str(line)) for i, line in await cursor.fetchall()]


async def mark(pool: AsyncConnectionPool[Any], key: RuntimeKey) -> int | None:
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT durable_id FROM ishiki_fact_marks WHERE runtime_key = %s", (str(key),))
        row = await cursor.fetchone()
    return None if row is None else int(row[0])


async def test_every_log_is_copied_line_for_line_with_its_ids(
    pg_pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    chat = await write_log(tmp_path, CHAT, ["one", "two", "three"])
    cross = await write_log(tmp_path, CROSS, ["alone"])
    report = await import_fact_logs(pg_pool, tmp_path, holder="migrate-test")
    assert [(r.key, r.outcome, r.entries) for r in report.runtimes] == [
        (str(CHAT), "copied", 3),
        (str(CROSS), "copied", 1),
    ]
    assert report.ok
    assert await stored_rows(pg_pool, CHAT) == file_rows(chat)
    assert await stored_rows(pg_pool, CROSS) == file_rows(cross)
    assert await mark(pg_pool, CHAT) == 3
    book = LeaseBook(pg_pool, "host-a", seconds=30)
    lease = await book.acquire(f"runtime:{CHAT}")  # the migration gave the lease back
    assert lease is not None
    log = await PgFactLog.open(book, lease, str(CHAT))
    assert log.last_id == 3
    assert [e.data["text"] for e in await log.read_back(lambda entries: list(islice(entries, 10)))] == [
        "three",
        "two",
        "one",
    ]
    assert (await log.append("message", {"text": "four"})).id == 4
    await log.close()


async def test_a_second_run_finds_it_there_even_after_the_fleet_wrote_more(
    pg_pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    await write_log(tmp_path, CHAT, ["one", "two"])
    await import_fact_logs(pg_pool, tmp_path, holder="migrate-1")
    again = await import_fact_logs(pg_pool, tmp_path, holder="migrate-2")
    assert [(r.outcome, r.detail) for r in again.runtimes] == [("already there", "")]
    book = LeaseBook(pg_pool, "host-a", seconds=30)
    lease = await book.acquire(f"runtime:{CHAT}")
    assert lease is not None
    log = await PgFactLog.open(book, lease, str(CHAT))
    await log.append("message", {"text": "three, on PostgreSQL"})
    await log.close()
    await book.release(lease)
    third = await import_fact_logs(pg_pool, tmp_path, holder="migrate-3")
    assert [(r.outcome, r.detail) for r in third.runtimes] == [("already there", "1 newer entries in the store")]
    assert third.ok
    assert len(await stored_rows(pg_pool, CHAT)) == 3


async def test_rows_that_differ_are_refused_naming_the_runtime_and_nothing_is_written(
    pg_pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    path = await write_log(tmp_path, CHAT, ["one", "two"])
    await write_log(tmp_path, CROSS, ["alone"])
    await LeaseBook(pg_pool, "setup", seconds=30).setup()
    other = Entry(1, "message", 1.0, {"text": "another history"}).to_json()
    async with pg_pool.connection() as conn:
        await conn.execute("INSERT INTO ishiki_facts (runtime_key, id, line) VALUES (%s, 1, %s)", (str(CHAT), other))
    report = await import_fact_logs(pg_pool, tmp_path, holder="migrate-test")
    chat, cross = report.runtimes
    assert (chat.key, chat.outcome) == (str(CHAT), "differs")
    assert "from id 1 on" in chat.detail
    assert not chat.ok
    assert not report.ok
    assert await stored_rows(pg_pool, CHAT) == [(1, other)]
    assert await mark(pg_pool, CHAT) is None
    assert cross.outcome == "copied"  # one runtime's refusal stops no other
    assert file_rows(path)[0][1] != other


async def test_a_runtime_a_live_host_serves_is_refused_naming_it(
    pg_pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    await write_log(tmp_path, CHAT, ["one"])
    host = LeaseBook(pg_pool, "host-b", seconds=30)
    await host.setup()
    assert await host.acquire(f"runtime:{CHAT}") is not None
    report = await import_fact_logs(pg_pool, tmp_path, holder="migrate-test")
    (chat,) = report.runtimes
    assert chat.outcome == "refused"
    assert "held by host-b" in chat.detail
    assert await stored_rows(pg_pool, CHAT) == []
    assert (await host.current(f"runtime:{CHAT}")) is not None  # the host's lease is untouched


async def test_a_torn_tail_is_set_aside_and_not_copied(pg_pool: AsyncConnectionPool[Any], tmp_path: Path) -> None:
    path = await write_log(tmp_path, CHAT, ["one", "two"])
    whole = file_rows(path)
    with path.open("ab") as file:
        file.write(b'{"id":3,"type":"message","ts":1.0,"da')  # the writer died inside this write
    report = await import_fact_logs(pg_pool, tmp_path, holder="migrate-test")
    (chat,) = report.runtimes
    assert (chat.outcome, chat.entries) == ("copied", 2)
    assert any("torn tail" in warning and warning.endswith("(not copied)") for warning in chat.warnings)
    assert await stored_rows(pg_pool, CHAT) == whole
    assert b'"id":3' in path.with_name("facts.jsonl.corrupt").read_bytes()
    assert file_rows(path) == whole  # cut, as the file log cuts it when it opens


async def test_a_bad_line_in_the_middle_is_skipped_with_a_warning(
    pg_pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    path = await write_log(tmp_path, CHAT, ["one"])
    with path.open("a", encoding="utf-8") as file:  # a line damaged in the middle, then a good one
        file.write("not json\n" + Entry(2, "message", 2.0, {"text": "two"}).to_json() + "\n")
    (chat,) = (await import_fact_logs(pg_pool, tmp_path, holder="migrate-test")).runtimes
    assert (chat.outcome, chat.entries) == ("copied", 2)
    assert any("skipped a bad line" in warning for warning in chat.warnings)
    assert [i for i, _ in await stored_rows(pg_pool, CHAT)] == [1, 2]


async def test_a_log_another_writer_has_open_is_refused(pg_pool: AsyncConnectionPool[Any], tmp_path: Path) -> None:
    path = await write_log(tmp_path, CHAT, ["one"])
    log = await FactLog.open(path)
    try:
        (chat,) = (await import_fact_logs(pg_pool, tmp_path, holder="migrate-test")).runtimes
    finally:
        await log.close()
    assert chat.outcome == "refused"
    assert "another writer" in chat.detail
    assert await stored_rows(pg_pool, CHAT) == []


async def test_an_empty_data_dir_copies_nothing(pg_pool: AsyncConnectionPool[Any], tmp_path: Path) -> None:
    report = await import_fact_logs(pg_pool, tmp_path / "missing", holder="migrate-test")
    assert report.runtimes == ()
    assert report.ok
