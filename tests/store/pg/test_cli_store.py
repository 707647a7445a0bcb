"""``ishiki store migrate`` and ``ishiki doctor`` with a PostgreSQL store, as real subprocesses against a real server:
the copy and its second run, the URL from ishiki.yaml or ``--to``, a running host refused, an unreachable store
named without its password, and the doctor's store line for a good, an unreachable and a too-new database."""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from ishiki_host.addresses.keys import RuntimeKey, runtime_dir
from ishiki_host.cli.doctor.store import store_findings
from ishiki_host.core.factlog import FactLog
from ishiki_host.host.lock import claim_data_dir
from ishiki_host.store.pg.schema import SCHEMA_VERSION

KEY = RuntimeKey.for_channel("ana", "telegram:1", "private:42")
MARKS = {"✓": "ok", "!": "warning", "✗": "error"}


def config(write_config: Callable[..., Path], store: str = "file") -> Path:
    """A config directory whose data dir holds one runtime's log of two entries."""
    root = write_config({"ishiki.yaml": f"store: {json.dumps(store)}\n", "models.yaml": "providers: {}\n"})

    async def write() -> None:
        log = await FactLog.open(runtime_dir(root / "data", KEY) / "facts.jsonl")
        await log.append("message", {"text": "hello"})
        await log.append("message", {"text": "again"}, turn=1)
        await log.close()

    anyio.run(write)
    return root


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def store_line(stdout: str) -> tuple[str, str]:
    """The level and detail of the doctor's store finding."""
    for line in stdout.splitlines():
        if line[2:].startswith("store: "):
            return MARKS[line[0]], line[len("x store: ") :]
    raise AssertionError(f"no store line in {stdout!r}")


def test_migrate_copies_then_finds_it_there(run_ishiki: Any, write_config: Any, postgres_url: str) -> None:
    root = config(write_config, postgres_url)
    done = run_ishiki("store", "migrate", str(root))
    assert done.returncode == 0, done.stderr
    assert f"copied  {KEY}  2 entries" in done.stdout
    assert "not copied: memory.db" in done.stdout
    assert done.stdout.splitlines()[-1] == "ok: 1 runtime, 1 copied"
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT id FROM ishiki_facts WHERE runtime_key = %s ORDER BY id", (str(KEY),)).fetchall()
        assert [r[0] for r in rows] == [1, 2]
        assert conn.execute("SELECT count(*) FROM ishiki_leases").fetchone() == (0,)  # the lease was given back
    again = run_ishiki("store", "migrate", str(root), "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["ok"] is True
    assert [(r["key"], r["outcome"], r["entries"]) for r in report["runtimes"]] == [(str(KEY), "already there", 2)]
    assert report["summary"]["already there"] == 1
    assert report["notCopied"][0].startswith("memory.db")


def test_migrate_takes_to_over_the_config_and_needs_one(run_ishiki: Any, write_config: Any, postgres_url: str) -> None:
    root = config(write_config)
    done = run_ishiki("store", "migrate", str(root))
    assert done.returncode == 2
    assert "give --to URL" in done.stderr
    copied = run_ishiki("store", "migrate", str(root), "--to", postgres_url)
    assert copied.returncode == 0, copied.stderr
    assert "1 copied" in copied.stdout


def test_migrate_is_refused_while_a_host_runs_there(run_ishiki: Any, write_config: Any, postgres_url: str) -> None:
    root = config(write_config, postgres_url)
    claim = claim_data_dir(root / "data")  # as the host takes it
    try:
        done = run_ishiki("store", "migrate", str(root))
    finally:
        claim.release()
    assert done.returncode == 1
    assert f"a host (pid {os.getpid()}) is running on {root / 'data'}" in done.stderr
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT to_regclass('ishiki_facts')").fetchone() == (None,)  # not even the schema


def test_an_unreachable_store_is_named_without_its_password(run_ishiki: Any, write_config: Any) -> None:
    url = f"postgresql://ishiki:s3cret@127.0.0.1:{closed_port()}/fleet"
    root = config(write_config, url)
    done = run_ishiki("store", "migrate", str(root))
    assert done.returncode == 1
    assert f"the PostgreSQL store postgresql://ishiki:***@127.0.0.1:{url.split(':')[3]}" in done.stderr
    assert "did not answer" in done.stderr
    doctor = run_ishiki("doctor", str(root), "--timeout", "3")
    level, detail = store_line(doctor.stdout)
    assert level == "error"
    assert "did not answer" in detail
    assert "ishiki:***@127.0.0.1" in detail
    assert "fix: check the URL's host" in doctor.stdout
    assert "s3cret" not in done.stdout + done.stderr + doctor.stdout + doctor.stderr


def test_doctor_says_a_fresh_database_is_fine(run_ishiki: Any, write_config: Any, postgres_url: str) -> None:
    root = config(write_config, postgres_url)
    done = run_ishiki("doctor", str(root), "--json", "--timeout", "5")
    (finding,) = [f for f in json.loads(done.stdout)["findings"] if f["what"] == "store"]
    assert finding["level"] == "ok"
    assert finding["detail"].endswith("answers, no schema yet: migrated when a host starts")
    assert run_ishiki("store", "migrate", str(root)).returncode == 0
    level, detail = store_line(run_ishiki("doctor", str(root), "--timeout", "5").stdout)
    assert (level, detail.split(" answers, ")[1]) == ("ok", f"schema version {SCHEMA_VERSION}")


def test_doctor_and_migrate_refuse_a_newer_schema(run_ishiki: Any, write_config: Any, postgres_url: str) -> None:
    root = config(write_config, postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE ishiki_schema (version integer NOT NULL, one boolean PRIMARY KEY DEFAULT true)")
        conn.execute("INSERT INTO ishiki_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    level, detail = store_line(run_ishiki("doctor", str(root), "--timeout", "5").stdout)
    assert level == "error"
    assert f"version {SCHEMA_VERSION + 1}, newer than this host knows (version {SCHEMA_VERSION})" in detail
    done = run_ishiki("store", "migrate", str(root))
    assert done.returncode == 1
    assert f"version {SCHEMA_VERSION + 1}" in done.stderr


def test_doctor_says_nothing_of_a_file_store(run_ishiki: Any, write_config: Any) -> None:
    done = run_ishiki("doctor", str(config(write_config)), "--json", "--timeout", "3")
    assert [f for f in json.loads(done.stdout)["findings"] if f["what"] == "store"] == []


@pytest.mark.parametrize("args", [(), ("migrate", "/nonexistent")])
def test_store_without_a_subcommand_or_a_config_dir_exits_2(run_ishiki: Any, args: tuple[str, ...]) -> None:
    done = run_ishiki("store", *args)
    assert done.returncode == 2
    assert done.stderr


@pytest.mark.anyio
async def test_doctor_without_psycopg_gives_the_pip_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the postgresql extra were not installed
    (finding,) = await store_findings("postgresql://ishiki:s3cret@db/fleet", 1.0)
    assert (finding.level, finding.what) == ("error", "store")
    assert finding.detail == "a PostgreSQL store is configured, but psycopg is not installed"
    assert finding.fix == "pip install 'ishiki-host[postgresql]'"
