"""Schema version 1 of the memory database: every table the host and its built-in extensions use.

Times are seconds since the epoch (REAL) from the host's injectable clock. Booleans are 0/1 with a CHECK.

- ``sessions``: one row per segment of a runtime's fact log. ``summary`` is the text carried *into* the session
  (the seed written by ``/compact``); the summary *of* a session is its ``memories`` row of type ``summary``.
  At most one open session (``ended_at IS NULL``) per runtime.
- ``memories``: long-term notes of a profile. ``min_trust`` is the lowest trust level allowed to read the row
  (``untrusted`` < ``trusted`` < ``owner``): what was said in an owner-only exchange stays owner-only.
  ``search_text`` is ``content`` prepared for the tokenizer (CJK runs split into unigrams and bigrams, see
  ``ishiki_host.store.text``); ``memories_fts`` is an external-content FTS5 index over it, kept in sync by
  triggers, so the text is stored once in the table and only tokens in the index.
- ``images``: metadata of captured attachments. The bytes stay on disk in the resource center; ``path`` is
  relative to the data directory, so the directory can move. Deleting rows never deletes files: the caller
  removes the files the repository reports.
- ``learned_skills``: the skills found under ``skills/`` (synced from disk; ``enabled`` survives syncs).
- ``heartbeat`` / ``heartbeat_runs``: cron beats and their run history. Runs are kept after a one-time beat is
  deleted, so there is no foreign key from runs to beats.
- ``plugin_settings``: enabled state per tool, channel or extension; ``profile`` NULL is the global row, a
  profile's row overrides it.
"""

from __future__ import annotations

__all__ = ["STATEMENTS"]

STATEMENTS: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        runtime_key TEXT NOT NULL CHECK (length(runtime_key) > 0),
        start_fact_id INTEGER NOT NULL CHECK (start_fact_id >= 0),
        end_fact_id INTEGER CHECK (end_fact_id IS NULL OR end_fact_id >= start_fact_id - 1),
        start_reason TEXT NOT NULL CHECK (length(start_reason) > 0),
        end_reason TEXT,
        summary TEXT,
        created_at REAL NOT NULL,
        ended_at REAL,
        CHECK ((ended_at IS NULL) = (end_fact_id IS NULL))
    )
    """,
    "CREATE UNIQUE INDEX sessions_one_open ON sessions (runtime_key) WHERE ended_at IS NULL",
    "CREATE INDEX sessions_by_runtime ON sessions (runtime_key, id)",
    """
    CREATE TABLE memories (
        id INTEGER PRIMARY KEY,
        type TEXT NOT NULL CHECK (type IN ('summary', 'fact', 'lesson', 'reminder')),
        content TEXT NOT NULL CHECK (length(trim(content)) > 0),
        search_text TEXT NOT NULL,
        profile TEXT NOT NULL CHECK (length(profile) > 0),
        runtime_key TEXT NOT NULL,
        session_id INTEGER REFERENCES sessions (id) ON DELETE SET NULL,
        importance REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0.0 AND 1.0),
        min_trust TEXT NOT NULL DEFAULT 'owner' CHECK (min_trust IN ('untrusted', 'trusted', 'owner')),
        created_at REAL NOT NULL
    )
    """,
    "CREATE INDEX memories_by_profile ON memories (profile, created_at)",
    "CREATE INDEX memories_by_profile_type ON memories (profile, type, created_at)",
    "CREATE INDEX memories_by_session ON memories (session_id)",
    """
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        search_text,
        content = 'memories',
        content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, search_text) VALUES (new.id, new.search_text);
    END
    """,
    """
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
    END
    """,
    """
    CREATE TRIGGER memories_fts_update AFTER UPDATE OF search_text ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
        INSERT INTO memories_fts (rowid, search_text) VALUES (new.id, new.search_text);
    END
    """,
    """
    CREATE TABLE images (
        id INTEGER PRIMARY KEY,
        runtime_key TEXT NOT NULL CHECK (length(runtime_key) > 0),
        url TEXT NOT NULL CHECK (length(url) > 0),
        path TEXT NOT NULL CHECK (length(path) > 0),
        media_type TEXT NOT NULL,
        size INTEGER NOT NULL CHECK (size >= 0),
        sha256 TEXT,
        created_at REAL NOT NULL,
        UNIQUE (runtime_key, url)
    )
    """,
    "CREATE INDEX images_by_age ON images (created_at)",
    """
    CREATE TABLE learned_skills (
        name TEXT PRIMARY KEY CHECK (length(name) > 0),
        description TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        path TEXT NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
        updated_at REAL NOT NULL
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE heartbeat (
        id TEXT PRIMARY KEY CHECK (length(id) > 0),
        text TEXT NOT NULL CHECK (length(trim(text)) > 0),
        type TEXT NOT NULL CHECK (type IN ('reminder', 'task')),
        cron TEXT NOT NULL CHECK (length(trim(cron)) > 0),
        timezone TEXT,
        target_profile TEXT,
        target_sid TEXT,
        target_channel TEXT,
        recurring INTEGER NOT NULL DEFAULT 1 CHECK (recurring IN (0, 1)),
        managed INTEGER NOT NULL DEFAULT 0 CHECK (managed IN (0, 1)),
        created_by TEXT,
        last_run REAL,
        next_run REAL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        CHECK ((target_profile IS NULL) = (target_sid IS NULL) AND (target_sid IS NULL) = (target_channel IS NULL))
    ) WITHOUT ROWID
    """,
    "CREATE INDEX heartbeat_due ON heartbeat (next_run) WHERE next_run IS NOT NULL",
    """
    CREATE TABLE heartbeat_runs (
        id INTEGER PRIMARY KEY,
        beat_id TEXT NOT NULL,
        started_at REAL NOT NULL,
        finished_at REAL,
        outcome TEXT NOT NULL CHECK (outcome IN ('running', 'ok', 'failed', 'skipped')),
        output TEXT,
        CHECK ((outcome = 'running') = (finished_at IS NULL))
    )
    """,
    "CREATE INDEX heartbeat_runs_by_beat ON heartbeat_runs (beat_id, started_at)",
    "CREATE INDEX heartbeat_runs_by_age ON heartbeat_runs (started_at)",
    """
    CREATE TABLE plugin_settings (
        id INTEGER PRIMARY KEY,
        profile TEXT CHECK (profile IS NULL OR length(profile) > 0),
        kind TEXT NOT NULL CHECK (kind IN ('tool', 'channel', 'extension')),
        name TEXT NOT NULL CHECK (length(name) > 0),
        enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
        updated_at REAL NOT NULL
    )
    """,
    # NULLs are distinct in a UNIQUE constraint; the expression makes the global row unique too.
    "CREATE UNIQUE INDEX plugin_settings_key ON plugin_settings (ifnull(profile, ''), kind, name)",
)
