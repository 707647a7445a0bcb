"""Usage counters: noted in memory, added to hourly rows by a flush, summed per profile, channel, model and tool;
a database written by version 3 gains the tables; a failed flush keeps its counts."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from ishiki_host.errors import StoreError
from ishiki_host.store import MemoryStore
from ishiki_host.store.db import connect
from ishiki_host.store.migrations import MIGRATIONS, SCHEMA_VERSION
from ishiki_host.store.repos.usage import UsageSum, period_days, usage_bucket

pytestmark = pytest.mark.anyio

PARIS = ZoneInfo("Europe/Paris")
NOON = ("2025-03-01", 12)


async def test_counts_are_summed_by_each_dimension_once_flushed(store: MemoryStore) -> None:
    usage = store.usage
    usage.note_call(NOON, "ana", "telegram:bot", "fake:a", input_tokens=100, output_tokens=10)
    usage.note_call(NOON, "ana", "telegram:bot", "fake:a", input_tokens=50, output_tokens=5)
    usage.note_call(("2025-03-01", 13), "ana", "console:local", "fake:b", failed=True)
    usage.note_call(NOON, "bob", "telegram:bot", "fake:a", input_tokens=7, output_tokens=3)
    usage.note_tool(NOON, "ana", "telegram:bot", "send_message")
    usage.note_tool(NOON, "ana", "telegram:bot", "send_message")
    usage.note_tool(NOON, "bob", "telegram:bot", "memory_search")
    assert usage.pending == 5  # rows to write: the two equal calls share one
    assert await usage.flush() == 5
    assert usage.pending == 0

    totals = await usage.totals("2025-03-01", "2025-03-01")
    assert totals.total == UsageSum(calls=4, failures=1, input_tokens=157, output_tokens=18)
    assert totals.calls_by("profile") == [("ana", UsageSum(3, 1, 150, 15)), ("bob", UsageSum(1, 0, 7, 3))]
    assert [name for name, _ in totals.calls_by("channel")] == ["telegram:bot", "console:local"]
    assert totals.calls_by("model")[0] == ("fake:a", UsageSum(3, 0, 157, 18))
    assert totals.tools_by_name() == [("send_message", 2), ("memory_search", 1)]

    only_ana = await usage.totals("2025-03-01", "2025-03-01", profile="ana")
    assert {c.profile for c in only_ana.calls} == {"ana"}
    assert only_ana.tools_by_name() == [("send_message", 2)]


async def test_a_second_flush_adds_to_the_same_hour(store: MemoryStore) -> None:
    store.usage.note_call(NOON, "ana", "", "fake:a", input_tokens=1, output_tokens=1)
    await store.usage.flush()
    store.usage.note_call(NOON, "ana", "", "fake:a", input_tokens=2, output_tokens=2)
    totals = await store.usage.totals("2025-03-01", "2025-03-01")  # flushes the second call first
    assert [c.sum for c in totals.calls] == [UsageSum(2, 0, 3, 3)]


async def test_days_outside_the_period_are_left_out(store: MemoryStore) -> None:
    for day in ("2025-02-27", "2025-02-28", "2025-03-01"):
        store.usage.note_call((day, 0), "ana", "", "fake:a", input_tokens=10)
    two_days = await store.usage.totals("2025-02-28", "2025-03-01")
    assert two_days.total.calls == 2
    assert (two_days.first_day, two_days.last_day) == ("2025-02-28", "2025-03-01")


async def test_a_day_that_is_no_date_is_refused(store: MemoryStore) -> None:
    with pytest.raises(StoreError, match="YYYY-MM-DD, not 'today'"):
        await store.usage.totals("today", "2025-03-01")


async def test_a_failed_flush_keeps_its_counts_for_the_next(store: MemoryStore) -> None:
    store.usage.note_call(NOON, "ana", "", "fake:a", input_tokens=5)
    await store.db.write(lambda conn: conn.execute("DROP TABLE usage_calls"))
    with pytest.raises(StoreError, match="no such table: usage_calls"):
        await store.usage.flush()
    store.usage.note_call(NOON, "ana", "", "fake:a", input_tokens=5)
    assert store.usage.pending == 1
    await store.db.write(lambda conn: conn.execute(MIGRATIONS[3].statements[0]))
    assert await store.usage.flush() == 1
    totals = await store.usage.totals("2025-03-01", "2025-03-01")
    assert totals.total == UsageSum(2, 0, 10, 0)


async def test_closing_the_store_writes_what_is_still_in_memory(db_path: Path) -> None:
    async with await MemoryStore.open(db_path) as store:
        store.usage.note_tool(NOON, "ana", "", "send_message")
    async with await MemoryStore.open(db_path) as again:
        assert (await again.usage.totals("2025-03-01", "2025-03-01")).tools_by_name() == [("send_message", 1)]


def test_a_version_3_database_gains_the_usage_tables_and_keeps_its_memories(db_path: Path) -> None:
    connect(db_path, migrations=MIGRATIONS[:3]).close()
    conn = sqlite3.connect(db_path)
    conn.execute(
        "INSERT INTO memories (type, content, search_text, profile, runtime_key, created_at) "
        "VALUES ('fact', 'likes tea', 'likes tea', 'ana', 'ana/main', 1)"
    )
    conn.commit()
    conn.close()
    upgraded = connect(db_path)
    try:
        assert upgraded.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 4
        assert [tuple(r) for r in upgraded.execute("SELECT content FROM memories")] == [("likes tea",)]
        assert upgraded.execute("SELECT count(*) FROM usage_calls").fetchone()[0] == 0
        assert upgraded.execute("SELECT count(*) FROM usage_tools").fetchone()[0] == 0
    finally:
        upgraded.close()


def test_buckets_and_periods_are_in_the_host_time_zone() -> None:
    late_evening_utc = 1_740_869_400.0  # 2025-03-01 22:50 UTC = 23:50 in Paris
    assert usage_bucket(late_evening_utc, ZoneInfo("UTC")) == ("2025-03-01", 22)
    assert usage_bucket(late_evening_utc, PARIS) == ("2025-03-01", 23)
    assert usage_bucket(late_evening_utc + 3600, PARIS) == ("2025-03-02", 0)
    assert period_days(late_evening_utc, PARIS, 1) == ("2025-03-01", "2025-03-01")
    assert period_days(late_evening_utc, PARIS, 7) == ("2025-02-23", "2025-03-01")
    with pytest.raises(ValueError, match="at least one day, not 0"):
        period_days(late_evening_utc, PARIS, 0)
