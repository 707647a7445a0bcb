"""``ishiki store migrate [DIR] [--to URL] [--json]``: copy a data directory's fact logs into a PostgreSQL store.

The URL is ``--to``, else ``ishiki.yaml``'s ``store`` (a config that says ``store: file`` needs ``--to``). The
data directory must be idle: the command holds its lock (``<data_dir>/ishiki.lock``, the one ``ishiki run``
takes, ``ishiki_host.host.lock``) while it copies, so a host is refused while it runs and no host starts
meanwhile. Each runtime's log is copied under the runtime's lease, all of it or nothing
(``ishiki_host.store.pg.import_files`` says how, and why running it twice is safe). A torn tail of a log is set
aside into ``facts.jsonl.corrupt`` as the host would at its next start, and not copied. The memory database
(``memory.db``) is not copied: its tables are not on PostgreSQL yet, so it stays where it is.

One line per runtime and a summary (``--json``: ``{"ok", "dir", "dataDir", "store", "runtimes": [{"key",
"path", "outcome", "entries", "detail", "warnings"}], "summary", "notCopied"}``); the password of the URL is
never printed. Exit status: 0 when every runtime is in the store, 1 when one is not (or the store, the data
directory or psycopg is not there to use), 2 when DIR is not a config directory or no URL is given.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ishiki_host.cli._args import add_dir_argument, usable_dir
from ishiki_host.cli._output import print_json, table

if TYPE_CHECKING:
    from ishiki_host.store.pg.import_files import ImportReport

__all__ = ["register", "render_report", "run_migrate"]

_PIP_FIX = "pip install 'ishiki-host[postgresql]'"


class _Refused(Exception):
    """Why the copy cannot start (the message is the whole line)."""


def register(subparsers: Any) -> None:
    """Add the ``store`` command and its ``migrate`` subcommand."""
    parser = subparsers.add_parser(
        "store",
        help="move a data directory's fact logs to a PostgreSQL store",
        description="Work on the store of a config directory: where its fact logs live (`store:` in ishiki.yaml).",
    )
    commands = parser.add_subparsers(dest="store_command", metavar="SUBCOMMAND")
    migrate = commands.add_parser(
        "migrate",
        help="copy the fact logs of DIR's data dir into PostgreSQL",
        description="Copy every runtime's fact log of DIR's data dir into the PostgreSQL store of --to (default: "
        "ishiki.yaml's store), each under its runtime's lease; safe to run again. No host may run on DIR meanwhile. "
        "memory.db is not copied (its tables are not on PostgreSQL yet). Exit 0 when every runtime is in the "
        "store, 1 when one is not, 2 when DIR is not a config directory or there is no URL.",
    )
    add_dir_argument(migrate)
    migrate.add_argument("--to", metavar="URL", help="the PostgreSQL store (postgresql://user:password@host/db)")
    migrate.add_argument("--json", action="store_true", help="print the report as JSON")
    migrate.set_defaults(handler=run_migrate)
    parser.set_defaults(handler=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def run_migrate(args: argparse.Namespace) -> int:
    """Copy the fact logs of ``args.dir``; print the report; return the exit status."""
    from ishiki_host.config.host import load_host_config

    root = usable_dir("store migrate", args.dir)
    if root is None:
        return 2
    host = load_host_config(root)[0]
    url = args.to or host.store
    if url == "file":
        return _fail("no PostgreSQL store to copy to: give --to URL, or set `store:` in ishiki.yaml", 2)
    try:
        from ishiki_host.store.pg.pool import is_postgres_url, safe_url
    except ImportError:
        return _fail(f"a PostgreSQL store needs psycopg, which is not installed: {_PIP_FIX}", 1)
    if not is_postgres_url(url):
        return _fail(f"{safe_url(url)} is not a PostgreSQL URL (postgresql://user:password@host/db)", 2)
    try:
        with _idle(host.data_dir):
            report = _copy(url, host.data_dir)
    except _Refused as exc:
        return _fail(str(exc), 1)
    if args.json:
        print_json(_as_json(report, root, host.data_dir, safe_url(url)))
    else:
        print("\n".join(render_report(report, host.data_dir, safe_url(url))))
    return 0 if report.ok else 1


def _fail(message: str, code: int) -> int:
    print(f"ishiki store migrate: {message}", file=sys.stderr)
    return code


@contextlib.contextmanager
def _idle(data_dir: Path) -> Iterator[None]:
    """Hold the data dir's host lock while the copy runs (``_Refused`` naming the host that holds it). No pid
    file is written: ``ishiki reload`` must not signal this command."""
    from ishiki_host.host.lock import LOCK_FILE

    if not data_dir.is_dir():
        yield  # nothing to copy, and no host to keep out
        return
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            who = f"pid {pid}" if pid.isdigit() else "another process"
            raise _Refused(f"a host ({who}) is running on {data_dir}: stop it first, then copy") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)  # a host refused meanwhile names this process
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def _copy(url: str, data_dir: Path) -> ImportReport:
    import anyio
    import psycopg

    from ishiki_host.errors import StoreError
    from ishiki_host.store.pg.import_files import import_fact_logs
    from ishiki_host.store.pg.pool import open_pool

    async def copy() -> ImportReport:
        pool = await open_pool(url, max_size=2)
        try:
            return await import_fact_logs(pool, data_dir, holder=f"migrate-{uuid.uuid4().hex}")
        finally:
            await pool.close()

    try:
        return anyio.run(copy)
    except StoreError as exc:  # StoreUnreachable, or a schema newer than this host knows
        raise _Refused(str(exc)) from None
    except psycopg.Error as exc:  # the server went away mid-copy: what was committed stays, the rest runs again
        raise _Refused(f"the PostgreSQL store failed during the copy ({exc}); run the command again") from None


def render_report(report: ImportReport, data_dir: Path, store: str) -> list[str]:
    """The report as lines for people: what was copied from where to where, a row per runtime, the summary."""
    from ishiki_host.store.pg.import_files import NOT_COPIED

    lines = [f"fact logs of {data_dir} -> {store}"]
    rows = []
    for runtime in report.runtimes:
        count = f"{runtime.entries} entr{'y' if runtime.entries == 1 else 'ies'}"
        rows.append(["✓" if runtime.ok else "✗", runtime.outcome, runtime.key, f"{count} {runtime.detail}".strip()])
    lines += table(rows, indent="  ") or ["  no fact logs here: nothing to copy"]
    lines += [f"  ! {warning}" for runtime in report.runtimes for warning in runtime.warnings]
    lines.append(f"not copied: {NOT_COPIED}")
    counts = ", ".join(f"{n} {outcome}" for outcome, n in report.counts().items() if n)
    total = len(report.runtimes)
    lines.append(
        f"{'ok' if report.ok else 'not ok'}: {total} runtime{'' if total == 1 else 's'}"
        + (f", {counts}" if counts else "")
    )
    return lines


def _as_json(report: ImportReport, root: Path, data_dir: Path, store: str) -> dict[str, Any]:
    from ishiki_host.store.pg.import_files import NOT_COPIED

    runtimes = [
        {"key": r.key, "path": str(r.path), "outcome": r.outcome, "entries": r.entries, "detail": r.detail,
         "warnings": list(r.warnings)}
        for r in report.runtimes
    ]  # fmt: skip
    return {
        "ok": report.ok,
        "dir": str(root),
        "dataDir": str(data_dir),
        "store": store,
        "runtimes": runtimes,
        "summary": report.counts(),
        "notCopied": [NOT_COPIED],
    }
