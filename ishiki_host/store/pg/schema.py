"""The fleet's tables on PostgreSQL, versioned: every part's ``setup`` brings the database to ``SCHEMA_VERSION``.

The version lives in ``ishiki_schema`` (one row) and changes in the same transaction as the statements that
reach it (PostgreSQL's DDL is transactional), so a version can never disagree with the tables: an upgrade runs
every migration above the stored version in order, in ONE transaction, and a failure leaves the database as it
was. Several hosts starting at once take turns on a transaction-scoped advisory lock, so the second one finds
the work done. A database whose version is newer than this host knows is refused with both versions named,
before anything is written: an older host must not write rows a newer schema reads differently.

The steps are ``ishiki_host.store.migrations.Migration`` values, the type the SQLite memory database's
migrations use; to change the schema, append a step, never edit one that has shipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ishiki_host.errors import StoreError
from ishiki_host.store.migrations import Migration

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PG_MIGRATIONS", "SCHEMA_VERSION", "migrate", "schema_version"]

_LOCK = 0x4953_484B_5047  # "ISHKPG": the advisory lock migrations take turns on

PG_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "leases with fencing tokens, the fact log and its durable marks, the inbox",
        (
            """
            CREATE TABLE ishiki_leases (
                name text PRIMARY KEY,
                holder text NOT NULL,
                token bigint NOT NULL,
                expires_at timestamptz NOT NULL
            )
            """,
            "CREATE SEQUENCE ishiki_lease_tokens",
            """
            CREATE TABLE ishiki_facts (
                runtime_key text NOT NULL,
                id bigint NOT NULL,
                line text NOT NULL,
                PRIMARY KEY (runtime_key, id)
            )
            """,
            "CREATE TABLE ishiki_fact_marks (runtime_key text PRIMARY KEY, durable_id bigint NOT NULL)",
            """
            CREATE TABLE ishiki_inbox (
                seq bigserial PRIMARY KEY,
                runtime_key text NOT NULL,
                body text NOT NULL,
                taken_token bigint
            )
            """,
            "CREATE INDEX ishiki_inbox_waiting ON ishiki_inbox (runtime_key, seq) WHERE taken_token IS NULL",
        ),
    ),
    Migration(
        2,
        "heartbeats and their runs, each due time claimed once across the fleet (store.pg.beats)",
        # One string of several statements: psycopg sends a query without parameters as a simple query.
        (
            """
CREATE TABLE IF NOT EXISTS ishiki_heartbeat (
    id text PRIMARY KEY CHECK (length(id) > 0),
    text text NOT NULL CHECK (length(trim(text)) > 0),
    type text NOT NULL CHECK (type IN ('reminder', 'task')),
    cron text NOT NULL CHECK (length(trim(cron)) > 0),
    timezone text,
    target_profile text,
    target_sid text,
    target_channel text,
    recurring boolean NOT NULL DEFAULT true,
    managed boolean NOT NULL DEFAULT false,
    created_by text,
    last_run double precision,
    next_run double precision,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    trust text CHECK (trust IS NULL OR trust IN ('untrusted', 'trusted', 'owner')),
    paused boolean NOT NULL DEFAULT false,
    CHECK ((target_profile IS NULL) = (target_sid IS NULL) AND (target_sid IS NULL) = (target_channel IS NULL))
);
CREATE INDEX IF NOT EXISTS ishiki_heartbeat_due ON ishiki_heartbeat (next_run) WHERE next_run IS NOT NULL;
CREATE TABLE IF NOT EXISTS ishiki_heartbeat_runs (
    id bigserial PRIMARY KEY,
    beat_id text NOT NULL,
    started_at double precision NOT NULL,
    finished_at double precision,
    outcome text NOT NULL CHECK (outcome IN ('running', 'ok', 'failed', 'skipped')),
    output text,
    due_at double precision,
    claimed_by text,
    claimed_until timestamptz,
    token bigint,
    attempt integer NOT NULL DEFAULT 1,
    CHECK ((outcome = 'running') = (finished_at IS NULL))
);
CREATE UNIQUE INDEX IF NOT EXISTS ishiki_heartbeat_runs_slot ON ishiki_heartbeat_runs (beat_id, due_at)
    WHERE due_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS ishiki_heartbeat_runs_claims ON ishiki_heartbeat_runs (claimed_until)
    WHERE outcome = 'running';
CREATE INDEX IF NOT EXISTS ishiki_heartbeat_runs_by_beat ON ishiki_heartbeat_runs (beat_id, started_at);
CREATE INDEX IF NOT EXISTS ishiki_heartbeat_runs_by_age ON ishiki_heartbeat_runs (started_at);
CREATE SEQUENCE IF NOT EXISTS ishiki_beat_tokens;
""",
        ),
    ),
    Migration(
        3,
        "the fleet's hosts and when each was last seen (store.pg.hosts); when each inbox event was put",
        # Events already waiting get the upgrade's time as put_at: their true age is unknown, and the inbox is
        # short-lived rows, so rewriting it for a volatile default costs little.
        (
            """
CREATE TABLE IF NOT EXISTS ishiki_hosts (
    holder text PRIMARY KEY CHECK (length(holder) > 0),
    name text NOT NULL,
    pid integer,
    version text,
    started_at timestamptz NOT NULL,
    seen_at timestamptz NOT NULL,
    stopped_at timestamptz
);
ALTER TABLE ishiki_inbox ADD COLUMN IF NOT EXISTS put_at timestamptz NOT NULL DEFAULT clock_timestamp();
""",
        ),
    ),
    Migration(
        4,
        "each due slot of a host's heartbeat claimed by one host of the fleet (store.pg.slots)",
        (
            """
CREATE TABLE IF NOT EXISTS ishiki_beat_slots (
    beat_id text NOT NULL,
    due_at double precision NOT NULL,
    holder text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (beat_id, due_at)
);
CREATE INDEX IF NOT EXISTS ishiki_beat_slots_claimed ON ishiki_beat_slots (claimed_at);
""",
        ),
    ),
)

SCHEMA_VERSION = PG_MIGRATIONS[-1].version
"""The version this host's code reads and writes."""

_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS ishiki_schema (
    version integer NOT NULL,
    one boolean PRIMARY KEY DEFAULT true CHECK (one)
)
"""


async def migrate(pool: AsyncConnectionPool[Any], steps: tuple[Migration, ...] = PG_MIGRATIONS) -> int:
    """Bring the database of ``pool`` to the newest of ``steps`` (``SCHEMA_VERSION``); the version it was at (0:
    empty). Raises ``StoreError`` naming both versions when the database is newer than ``steps`` know."""
    newest = steps[-1].version
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        await conn.execute(_VERSION_TABLE)
        found = await _stored_version(conn)
        if found > newest:
            raise StoreError(
                f"the PostgreSQL store's schema is version {found}, newer than this host knows "
                f"(version {newest}): upgrade the host, or point it at another database"
            )
        for step in steps:
            if step.version > found:
                for statement in step.statements:
                    await conn.execute(statement)
        if found < newest:
            await conn.execute(
                "INSERT INTO ishiki_schema (version) VALUES (%s) ON CONFLICT (one) DO UPDATE SET version = %s",
                (newest, newest),
            )
        return found


async def schema_version(pool: AsyncConnectionPool[Any]) -> int:
    """The version the database of ``pool`` is at (0: never migrated)."""
    async with pool.connection() as conn:
        exists = await (await conn.execute("SELECT to_regclass('ishiki_schema') IS NOT NULL")).fetchone()
        return await _stored_version(conn) if exists and exists[0] else 0


async def _stored_version(conn: AsyncConnection[Any]) -> int:
    row = await (await conn.execute("SELECT version FROM ishiki_schema")).fetchone()
    return int(row[0]) if row else 0
