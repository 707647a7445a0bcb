"""``ishiki status`` of a config whose store is PostgreSQL, as a real subprocess against a real server: the fleet is
read from the database even though no host runs here (exit 1 all the same), as text and in --json; a database never
set up says so; one that does not answer is named without its password, in one line, with no traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from psycopg_pool import AsyncConnectionPool

from ishiki_host.store.pg.hosts import HostBook
from ishiki_host.store.pg.inbox import Inbox
from ishiki_host.store.pg.leases import LeaseBook

KEY = "ana/telegram:1/private:42"


def config(write_config: Callable[..., Path], store: str) -> Path:
    return write_config({"ishiki.yaml": f"store: {json.dumps(store)}\n", "models.yaml": "providers: {}\n"})


def a_fleet(url: str) -> None:
    """Two hosts on ``url``: web-1 alive with a runtime and an account, web-2 dead; one event waiting."""

    async def write() -> None:
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(url, open=False, kwargs={"autocommit": True})
        await pool.open(wait=True)
        try:
            for holder in ("web-1/3f2a9c1d", "web-2/77aa00bb"):
                book = HostBook(pool, holder, holder.split("/")[0], pid=4242)
                await book.setup()
                await book.register()
            leases = LeaseBook(pool, "web-1/3f2a9c1d", seconds=60)
            assert await leases.acquire(f"runtime:{KEY}") is not None
            assert await leases.acquire("account:telegram:1") is not None
            await Inbox(pool).put(KEY, "hello")
            async with pool.connection() as conn:
                await conn.execute(
                    "UPDATE ishiki_hosts SET seen_at = clock_timestamp() - interval '10 min' WHERE name = 'web-2'"
                )
        finally:
            await pool.close()

    anyio.run(write)


def test_the_fleet_is_read_from_the_database_with_no_host_here(
    run_ishiki: Any, write_config: Any, postgres_url: str
) -> None:
    root = config(write_config, postgres_url)
    done = run_ishiki("status", str(root))
    assert done.returncode == 1
    assert done.stdout == f"fleet: {postgres_url}: no fleet tables in this database yet: no host has started on it\n"

    a_fleet(postgres_url)
    done = run_ishiki("status", str(root))
    assert done.returncode == 1  # no host runs for this config dir: the fleet is shown all the same
    assert done.stderr == f"ishiki status: no host is running for {root} (no {root / 'data' / 'ishiki.pid'})\n"
    lines = done.stdout.splitlines()
    assert lines[0] == f"fleet: {postgres_url}, 1 of 2 hosts alive (seen within 15 s)"
    assert lines[1] == "fleet hosts:"
    assert lines[2].startswith("  web-1  web-1/3f2a9c1d  alive  seen ")
    assert lines[2].endswith("  pid 4242  1 runtime, 1 account")
    assert lines[3].startswith("  web-2  web-2/77aa00bb  dead   seen 10 min ago")
    assert lines[3].endswith("  pid 4242  0 runtimes, 0 accounts")
    assert lines[4:] == [
        "fleet leases: 1 runtime, 1 account, 0 other",
        lines[5],
        "fleet beats: 0 due, 0 running, 0 abandoned by their host",
    ]
    assert lines[5].startswith("fleet inbox: 1 waiting, the oldest for ")
    assert lines[5].endswith(" s; 0 taken, not yet done")

    done = run_ishiki("status", str(root), "--json")
    assert done.returncode == 1
    fleet = json.loads(done.stdout)["fleet"]
    assert fleet["store"] == postgres_url
    assert [(h["name"], h["alive"], h["runtimeLeases"], h["accountLeases"]) for h in fleet["hosts"]] == [
        ("web-1", True, 1, 1),
        ("web-2", False, 0, 0),
    ]
    assert fleet["leases"] == {"runtime": 1, "account": 1, "other": 0}
    assert fleet["inbox"]["waiting"] == 1
    assert fleet["inbox"]["lagSeconds"] >= 0


def test_a_store_that_does_not_answer_is_one_line_without_the_password(
    run_ishiki: Any, write_config: Any, tmp_path: Path
) -> None:
    url = f"postgresql://ishiki:sekrit@/ishiki?host={tmp_path / 'nowhere'}"
    root = config(write_config, url)
    done = run_ishiki("status", str(root))
    assert done.returncode == 1
    shown = f"postgresql://ishiki:***@/ishiki?host={tmp_path / 'nowhere'}"
    assert done.stdout.startswith(f"fleet: the PostgreSQL store {shown} did not answer: ")
    assert done.stdout.count("\n") == 1
    assert "sekrit" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr

    done = run_ishiki("status", str(root), "--json")
    assert json.loads(done.stdout)["fleet"]["store"] == shown


def test_without_psycopg_the_fleet_says_what_to_install(run_ishiki: Any, write_config: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "no_psycopg"
    blocker.mkdir()
    (blocker / "psycopg.py").write_text("raise ModuleNotFoundError(\"No module named 'psycopg'\", name='psycopg')\n")
    without = {"PYTHONPATH": str(blocker)}
    done = run_ishiki("status", str(config(write_config, "file")), env=without)
    assert (done.returncode, done.stdout) == (1, "")  # a file store's status never needs psycopg
    assert "Traceback" not in done.stderr
    done = run_ishiki("status", str(config(write_config, "postgresql://ishiki:sekrit@db/ishiki")), env=without)
    assert done.returncode == 1
    assert done.stdout == (
        "fleet: the PostgreSQL store postgresql://ishiki:***@db/ishiki cannot be read without psycopg: "
        "pip install 'ishiki-host[postgresql]'\n"
    )
    assert "Traceback" not in done.stderr
