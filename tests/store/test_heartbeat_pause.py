"""Paused beats (schema version 5): kept as they are, never due nor next until resumed; managed beats cannot
be paused; a version 4 file gains the column with every beat it holds not paused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ishiki_host.errors import StoreError
from ishiki_host.store import BeatSpec, MemoryStore
from ishiki_host.store.db import connect
from ishiki_host.store.migrations import MIGRATIONS, SCHEMA_VERSION

pytestmark = pytest.mark.anyio


def spec(beat_id: str) -> BeatSpec:
    return BeatSpec(beat_id, "stretch", "task", "0 9 * * *")


async def test_a_paused_beat_is_never_due_until_resumed(store: MemoryStore) -> None:
    hb = store.heartbeats
    await hb.add(spec("early"), next_run=10.0)
    await hb.add(spec("late"), next_run=20.0)
    paused = await hb.pause("early")
    assert (paused.paused, paused.next_run) == (True, 10.0)  # kept as it is
    assert [b.id for b in await hb.due(now=30.0)] == ["late"]
    next_up = await hb.next_due()
    assert next_up is not None
    assert next_up.id == "late"
    resumed = await hb.resume("early", next_run=40.0)
    assert (resumed.paused, resumed.next_run) == (False, 40.0)
    assert [b.id for b in await hb.due(now=50.0)] == ["late", "early"]


async def test_an_unknown_or_managed_beat_cannot_be_paused(store: MemoryStore) -> None:
    await store.heartbeats.sync_managed([spec("filed")], schedule=lambda s: 10.0)
    with pytest.raises(StoreError, match=r"'filed' comes from heartbeats\.json"):
        await store.heartbeats.pause("filed")
    with pytest.raises(StoreError, match="no beat with id 'nope'"):
        await store.heartbeats.resume("nope", next_run=1.0)
    filed = await store.heartbeats.get("filed")
    assert filed is not None
    assert not filed.paused


def test_a_version_4_database_gains_the_paused_column_with_its_beats_not_paused(db_path: Path) -> None:
    assert MIGRATIONS[4].version == 5
    connect(db_path, migrations=MIGRATIONS[:4]).close()
    conn = sqlite3.connect(db_path)
    conn.execute(
        "INSERT INTO heartbeat (id, text, type, cron, recurring, managed, next_run, created_at, updated_at) "
        "VALUES ('old', 'stretch', 'task', '0 9 * * *', 1, 0, 10.0, 1, 1)"
    )
    conn.commit()
    conn.close()
    upgraded = connect(db_path)
    try:
        assert upgraded.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert [tuple(r) for r in upgraded.execute("SELECT id, paused FROM heartbeat")] == [("old", 0)]
        with pytest.raises(sqlite3.IntegrityError):
            upgraded.execute("UPDATE heartbeat SET paused = 2 WHERE id = 'old'")
    finally:
        upgraded.close()
