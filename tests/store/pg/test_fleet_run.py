"""``ishiki run`` on a PostgreSQL store, as a real subprocess: what it says, in one line and without a password or a
traceback, when it will not start (the store does not answer, ``store`` is no URL, its schema is newer, workers
asked for), and that a good store brings the database to the fleet's schema and registers the host."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg

from ishiki_host.store.pg.schema import SCHEMA_VERSION


def config(run_ishiki: Any, tmp_path: Path, store: str, extra: str = "") -> Path:
    """A config dir of ``ishiki init`` (its demo model answers offline) on ``store``."""
    root = tmp_path / "bot"
    assert run_ishiki("init", str(root)).returncode == 0
    with (root / "ishiki.yaml").open("a") as file:
        file.write(f"\nstore: {json.dumps(store)}\nreload_interval_seconds: 0\n{extra}")
    return root


def test_a_store_that_does_not_answer_stops_the_start_with_one_line(run_ishiki: Any, tmp_path: Path) -> None:
    root = config(run_ishiki, tmp_path, "postgresql://ishiki:sekrit@127.0.0.1:1/nowhere")
    done = run_ishiki("run", str(root))
    assert done.returncode == 1
    assert "the PostgreSQL store postgresql://ishiki:***@127.0.0.1:1/nowhere did not answer" in done.stderr
    assert "sekrit" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


def test_a_store_that_is_no_url_stops_the_start_rather_than_run_alone_on_files(run_ishiki: Any, tmp_path: Path) -> None:
    root = config(run_ishiki, tmp_path, "postgres")
    done = run_ishiki("run", str(root))
    assert done.returncode == 1
    assert "store: is neither `file` nor a PostgreSQL URL" in done.stderr
    assert not (root / "data" / "runtimes").exists()


def test_a_newer_schema_is_refused_with_both_versions(run_ishiki: Any, tmp_path: Path, postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE ishiki_schema (version integer NOT NULL)")
        conn.execute("INSERT INTO ishiki_schema VALUES (%s)", (SCHEMA_VERSION + 1,))
    done = run_ishiki("run", str(config(run_ishiki, tmp_path, postgres_url)))
    assert done.returncode == 1
    assert f"version {SCHEMA_VERSION + 1}" in done.stderr
    assert f"version {SCHEMA_VERSION})" in done.stderr
    assert "Traceback" not in done.stderr


def test_workers_are_refused_on_a_fleet_store(run_ishiki: Any, tmp_path: Path, postgres_url: str) -> None:
    done = run_ishiki("run", str(config(run_ishiki, tmp_path, postgres_url)), "--workers", "2")
    assert done.returncode == 1
    assert "one process per host" in done.stderr


def test_a_host_registers_in_the_fleet_and_says_it_stopped(run_ishiki: Any, tmp_path: Path, postgres_url: str) -> None:
    root = config(run_ishiki, tmp_path, postgres_url, "fleet: {name: web-1}\n")
    done = run_ishiki("run", str(root))  # the console's input is empty: it starts, and stops at once
    assert done.returncode == 0, done.stderr
    with psycopg.connect(postgres_url) as conn:
        hosts = conn.execute("SELECT name, stopped_at IS NOT NULL FROM ishiki_hosts").fetchall()
        (version,) = conn.execute("SELECT version FROM ishiki_schema").fetchone() or (None,)
    assert hosts == [("web-1", True)]
    assert version == SCHEMA_VERSION
