"""Versioned migrations of the memory database.

The schema version is SQLite's ``PRAGMA user_version`` (0 = empty database). It lives in the file header and
changes inside the same transaction as the migration, so a version number can never disagree with the tables:
an upgrade from version ``n`` runs every migration above ``n`` in order, in ONE transaction, and any failure
leaves the file exactly as it was. ``PRAGMA application_id`` marks the file as ours, so a database of another
program is refused instead of being "upgraded".

To change the schema, append a ``Migration(version=N + 1, ...)``; never edit a released one.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ishiki_host.errors import StoreError
from ishiki_host.store import schema_v1
from ishiki_host.store.tx import transaction

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "Migration", "migrate", "schema_version"]

APPLICATION_ID = 0x4953_484B  # "ISHK"


@dataclass(frozen=True, slots=True)
class Migration:
    """One step: the statements that take the schema from ``version - 1`` to ``version``."""

    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions, memories (+FTS5), images, learned_skills, heartbeat (+runs), plugin_settings",
        schema_v1.STATEMENTS,
    ),
    Migration(
        2,
        "heartbeat.trust: the highest level a beat's turns run at (the level of the turn that made it)",
        # Beats made before have none and run as they did, at the level of the runtime they wake.
        (
            "ALTER TABLE heartbeat ADD COLUMN trust TEXT "
            "CHECK (trust IS NULL OR trust IN ('untrusted', 'trusted', 'owner'))",
        ),
    ),
    Migration(
        3,
        "memory_links: the chats a memory was made in and the senders it involves (memory.scope)",
        # Memories made before have none: they are recalled in the runtime that made them, as before.
        (
            """
            CREATE TABLE memory_links (
                memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
                kind TEXT NOT NULL CHECK (kind IN ('chat', 'sender')),
                value TEXT NOT NULL CHECK (length(value) > 0),
                PRIMARY KEY (memory_id, kind, value)
            ) WITHOUT ROWID
            """,
            "CREATE INDEX memory_links_by_value ON memory_links (kind, value, memory_id)",
        ),
    ),
    Migration(
        4,
        "usage_calls, usage_tools: model calls, tokens and tool calls per hour, profile, channel, model or tool",
        # Hourly counters, not one row per call: /usage and `ishiki usage` sum a few rows per hour and key.
        (
            """
            CREATE TABLE usage_calls (
                day TEXT NOT NULL CHECK (length(day) = 10),
                hour INTEGER NOT NULL CHECK (hour BETWEEN 0 AND 23),
                profile TEXT NOT NULL,
                channel TEXT NOT NULL,
                model TEXT NOT NULL,
                calls INTEGER NOT NULL DEFAULT 0 CHECK (calls >= 0),
                failures INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
                input_tokens INTEGER NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
                output_tokens INTEGER NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
                PRIMARY KEY (day, hour, profile, channel, model)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE usage_tools (
                day TEXT NOT NULL CHECK (length(day) = 10),
                hour INTEGER NOT NULL CHECK (hour BETWEEN 0 AND 23),
                profile TEXT NOT NULL,
                channel TEXT NOT NULL,
                tool TEXT NOT NULL,
                calls INTEGER NOT NULL DEFAULT 0 CHECK (calls >= 0),
                PRIMARY KEY (day, hour, profile, channel, tool)
            ) WITHOUT ROWID
            """,
        ),
    ),
    Migration(
        5,
        "heartbeat.paused: a beat an operator paused keeps its definition and does not run until resumed",
        # Beats made before are not paused.
        ("ALTER TABLE heartbeat ADD COLUMN paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1))",),
    ),
    Migration(
        6,
        "pairing_requests, paired_senders: DM pairing codes of unlisted senders and the approvals an operator gave",
        # One open request per sender and profile; an approval lists the sender at a level for that profile.
        (
            """
            CREATE TABLE pairing_requests (
                code TEXT PRIMARY KEY CHECK (length(code) > 0),
                profile TEXT NOT NULL CHECK (length(profile) > 0),
                sender TEXT NOT NULL CHECK (length(sender) > 0),
                channel TEXT NOT NULL,
                name TEXT,
                requested_at REAL NOT NULL,
                expires_at REAL NOT NULL,
                sent_at REAL NOT NULL,
                UNIQUE (profile, sender)
            )
            """,
            """
            CREATE TABLE paired_senders (
                profile TEXT NOT NULL CHECK (length(profile) > 0),
                sender TEXT NOT NULL CHECK (length(sender) > 0),
                level TEXT NOT NULL CHECK (level IN ('untrusted', 'trusted', 'owner')),
                code TEXT NOT NULL,
                approved_at REAL NOT NULL,
                told_at REAL,
                PRIMARY KEY (profile, sender)
            ) WITHOUT ROWID
            """,
        ),
    ),
    Migration(
        7,
        "memory_vectors, memory_vector_bands, person_profiles: the embedding of each memory with its hash index, "
        "and the profile the summarizer keeps of each person and group",
        # Memories made before have none: the memory extension embeds them in the background.
        (
            """
            CREATE TABLE memory_vectors (
                memory_id INTEGER PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
                model TEXT NOT NULL CHECK (length(model) > 0),
                profile TEXT NOT NULL CHECK (length(profile) > 0),
                dimensions INTEGER NOT NULL CHECK (dimensions > 0),
                vector BLOB NOT NULL CHECK (length(vector) = 4 * dimensions),
                embedded_at REAL NOT NULL
            )
            """,
            "CREATE INDEX memory_vectors_by_model ON memory_vectors (model, profile)",
            """
            CREATE TABLE memory_vector_bands (
                model TEXT NOT NULL,
                profile TEXT NOT NULL,
                band INTEGER NOT NULL CHECK (band >= 0),
                signature INTEGER NOT NULL CHECK (signature >= 0),
                memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
                PRIMARY KEY (model, profile, band, signature, memory_id)
            ) WITHOUT ROWID
            """,
            "CREATE INDEX memory_vector_bands_by_memory ON memory_vector_bands (memory_id)",
            """
            CREATE TABLE person_profiles (
                profile TEXT NOT NULL CHECK (length(profile) > 0),
                subject TEXT NOT NULL CHECK (length(subject) > 0),
                kind TEXT NOT NULL CHECK (kind IN ('sender', 'chat')),
                name TEXT,
                content TEXT NOT NULL CHECK (length(trim(content)) > 0),
                min_trust TEXT NOT NULL CHECK (min_trust IN ('untrusted', 'trusted', 'owner')),
                edited_by TEXT NOT NULL CHECK (edited_by IN ('summarizer', 'owner')),
                updated_at REAL NOT NULL,
                PRIMARY KEY (profile, subject)
            ) WITHOUT ROWID
            """,
        ),
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def schema_version(conn: sqlite3.Connection) -> int:
    """The version recorded in the file (``PRAGMA user_version``)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(
    conn: sqlite3.Connection,
    path: Path,
    migrations: tuple[Migration, ...] = MIGRATIONS,
    *,
    application_id: int = APPLICATION_ID,
) -> int:
    """Bring the database to the newest version ``migrations`` know; returns the version it had before."""
    _check_sequence(migrations)
    latest = migrations[-1].version if migrations else 0
    current = schema_version(conn)
    _refuse_foreign(conn, path, current, application_id)
    if current > latest:
        raise StoreError(
            f"{path}: the memory database has schema version {current}, newer than this ishiki-host supports "
            f"(version {latest}); upgrade ishiki-host, or point data_dir at another directory"
        )
    pending = [m for m in migrations if m.version > current]
    if pending:
        _apply(conn, path, current, pending, application_id)
    return current


def _check_sequence(migrations: tuple[Migration, ...]) -> None:
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise StoreError(f"migrations must be numbered 1, 2, 3...; got {versions}")


def _refuse_foreign(conn: sqlite3.Connection, path: Path, current: int, application_id: int) -> None:
    """Another program's database has a different application id, or tables but no version of ours."""
    app = int(conn.execute("PRAGMA application_id").fetchone()[0])
    if app not in (0, application_id):
        raise StoreError(f"{path}: not an Ishiki memory database (application_id {app:#x}); point data_dir elsewhere")
    if current == 0 and app == 0:
        tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
        if tables:
            raise StoreError(
                f"{path}: not an Ishiki memory database (it has {tables} tables but no schema version); "
                "point data_dir elsewhere"
            )


def _apply(conn: sqlite3.Connection, path: Path, current: int, pending: list[Migration], application_id: int) -> None:
    step = pending[0]
    try:
        with transaction(conn):
            for step in pending:
                for statement in step.statements:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {int(step.version)}")
            conn.execute(f"PRAGMA application_id = {int(application_id)}")
    except sqlite3.Error as exc:
        hint = " (this Python's SQLite is built without FTS5)" if "fts5" in str(exc) else ""
        raise StoreError(
            f"{path}: migrating the memory database to schema version {step.version} ({step.description}) "
            f"failed: {exc}{hint}; the file is unchanged at version {current}"
        ) from exc
