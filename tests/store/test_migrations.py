"""Versioned migrations: old files upgrade step by step in one transaction, newer or foreign files are refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ishiki_host.errors import StoreError
from ishiki_host.store.db import connect
from ishiki_host.store.migrations import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, Migration

NOTES_V1 = Migration(1, "notes", ("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",))
NOTES_V2 = Migration(2, "note titles", ("ALTER TABLE notes ADD COLUMN title TEXT NOT NULL DEFAULT 'untitled'",))
NOTES_V3 = Migration(
    3,
    "tags",
    (
        "CREATE TABLE tags (note_id INTEGER NOT NULL REFERENCES notes (id), tag TEXT NOT NULL)",
        "INSERT INTO tags (note_id, tag) SELECT id, 'migrated' FROM notes",
    ),
)
BROKEN_V3 = Migration(3, "broken", ("CREATE TABLE tags (tag TEXT)", "INSERT INTO missing_table VALUES (1)"))


def _version_one_by_hand(path: Path) -> None:
    """A database as an older ishiki-host would have left it: version 1 of the notes schema, with a row."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    conn.execute("INSERT INTO notes (body) VALUES ('kept across upgrades')")
    conn.execute("PRAGMA user_version = 1")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.commit()
    conn.close()


def _header(path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0], conn.execute("PRAGMA application_id").fetchone()[0]
    finally:
        conn.close()


def test_a_new_file_gets_the_latest_schema_and_our_application_id(db_path: Path) -> None:
    connect(db_path).close()
    assert _header(db_path) == (SCHEMA_VERSION, APPLICATION_ID)
    assert MIGRATIONS[-1].version == SCHEMA_VERSION


def test_the_real_schema_has_every_table(db_path: Path) -> None:
    conn = connect(db_path)
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")}
    conn.close()
    expected = {"sessions", "memories", "memories_fts", "images", "learned_skills", "heartbeat", "heartbeat_runs"}
    expected |= {"memory_links"}
    assert expected | {"plugin_settings", "memories_fts_insert", "memories_fts_delete", "memories_fts_update"} <= names


def test_an_older_file_is_upgraded_step_by_step_and_keeps_its_data(db_path: Path) -> None:
    _version_one_by_hand(db_path)
    conn = connect(db_path, migrations=(NOTES_V1, NOTES_V2, NOTES_V3))
    try:
        assert [tuple(r) for r in conn.execute("SELECT body, title FROM notes")] == [
            ("kept across upgrades", "untitled")
        ]
        assert [tuple(r) for r in conn.execute("SELECT tag FROM tags")] == [("migrated",)]
    finally:
        conn.close()
    assert _header(db_path) == (3, APPLICATION_ID)


def test_a_failing_step_rolls_the_whole_upgrade_back(db_path: Path) -> None:
    _version_one_by_hand(db_path)
    with pytest.raises(StoreError) as info:
        connect(db_path, migrations=(NOTES_V1, NOTES_V2, BROKEN_V3))
    message = str(info.value)
    assert str(db_path) in message
    assert "schema version 3 (broken)" in message
    assert "no such table: missing_table" in message
    assert "unchanged at version 1" in message
    assert _header(db_path)[0] == 1
    conn = sqlite3.connect(db_path)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(notes)")]
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE name = 'tags'")]
    conn.close()
    assert columns == ["id", "body"]  # step 2 was rolled back with step 3
    assert tables == []


def test_a_newer_file_is_refused_naming_file_and_versions(db_path: Path) -> None:
    connect(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 4}")
    conn.commit()
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(StoreError) as info:
        connect(db_path)
    message = str(info.value)
    assert str(db_path) in message
    assert f"schema version {SCHEMA_VERSION + 4}" in message
    assert f"supports (version {SCHEMA_VERSION})" in message
    assert db_path.read_bytes() == before


def test_another_programs_database_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"not an Ishiki memory database \(it has 1 tables"):
        connect(db_path)
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA application_id = 42")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"application_id 0x2a"):
        connect(db_path)


def test_migrations_must_be_numbered_from_one(db_path: Path) -> None:
    with pytest.raises(StoreError, match=r"numbered 1, 2, 3"):
        connect(db_path, migrations=(NOTES_V2,))


def test_a_version_one_file_keeps_its_memories_and_beats_through_versions_two_and_three(db_path: Path) -> None:
    """Issue 20: beats get a maker's level (2), memories the chats and senders they are about (3)."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db_path)
    for statement in MIGRATIONS[0].statements:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(
        "INSERT INTO memories (type, content, search_text, profile, runtime_key, created_at) "
        "VALUES ('fact', 'Ana likes tea', 'ana likes tea', 'ana', 'ana/fake:bot/private:1', 0)"
    )
    conn.commit()
    conn.close()
    upgraded = connect(db_path)
    try:
        assert [tuple(r) for r in upgraded.execute("SELECT content, runtime_key FROM memories")] == [
            ("Ana likes tea", "ana/fake:bot/private:1")
        ]
        assert upgraded.execute("SELECT count(*) FROM memory_links").fetchone()[0] == 0
        columns = {row[1] for row in upgraded.execute("PRAGMA table_info(heartbeat)")}
        assert "trust" in columns
    finally:
        upgraded.close()
    assert _header(db_path) == (SCHEMA_VERSION, APPLICATION_ID)
