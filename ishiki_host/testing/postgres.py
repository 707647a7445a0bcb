"""A throwaway PostgreSQL server for tests: its own cluster in a temporary directory, reached on a Unix socket there.

    with PostgresServer() as server:
        url = server.create_database("leases")   # postgresql://ishiki@/leases?host=/tmp/...&port=5432
        ...

``start`` runs the installed server's ``initdb`` (trust authentication for one role, ``ishiki``; no fsync unless
``durable``: a test's data need not survive a power cut, a benchmark's commits must cost what they cost) in a
temporary directory (under ``parent``: a benchmark puts it on the disk it compares with) and ``pg_ctl start``
with no TCP listener, only the socket in the cluster's directory, so tests running at once never share a port or
a server. ``close`` stops it at once
(``immediate``) and removes the directory. The binaries are found as ``initdb`` on ``PATH``, else in Debian's
``/usr/lib/postgresql/<version>/bin`` (the newest); ``PostgresUnavailable`` says how to install them when there
are none (``.ci/run`` installs Debian's ``postgresql`` for CI). PostgreSQL refuses to run as root: run as root,
the cluster belongs to the ``postgres`` user, whose processes the server's are.

``pause`` and ``resume`` stop and continue the server's processes (SIGSTOP, SIGCONT), as a database that stops
answering without closing its connections would look.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import quote

__all__ = ["PostgresServer", "PostgresUnavailable", "postgres_bin_dir"]

PORT = 5432  # the socket's name only (.s.PGSQL.5432): the server listens on no TCP port
ROLE = "ishiki"
_DEBIAN = Path("/usr/lib/postgresql")
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine (the message says how to install them)."""


def postgres_bin_dir() -> Path:
    """Where ``initdb``, ``pg_ctl`` and ``psql`` are (see the module docstring)."""
    found = shutil.which("initdb")
    if found is not None:
        return Path(found).resolve().parent  # a link into the version's directory, as some images make
    versions = sorted(_DEBIAN.glob("*/bin/initdb"), key=lambda p: _version(p.parent.parent.name))
    if versions:
        return versions[-1].parent
    raise PostgresUnavailable(
        "no PostgreSQL server here (no initdb on PATH or in /usr/lib/postgresql/*/bin): install Debian's "
        "'postgresql' package (apt-get install postgresql), as .ci/run does"
    )


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


class PostgresServer:
    """One throwaway cluster (see the module docstring)."""

    def __init__(self, *, bin_dir: Path | None = None, parent: Path | None = None, durable: bool = False):
        self.bin_dir = bin_dir
        self.parent = parent
        self.durable = durable
        self.directory: Path | None = None
        self._user: str | None = None

    @property
    def data_dir(self) -> Path:
        """The cluster's data directory."""
        assert self.directory is not None, "start the server first"
        return self.directory / "data"

    @property
    def socket_dir(self) -> Path:
        """The directory of the server's Unix socket."""
        assert self.directory is not None, "start the server first"
        return self.directory

    def url(self, database: str = "postgres") -> str:
        """A libpq URL of ``database`` on this server, as role ``ishiki``."""
        return f"postgresql://{ROLE}@/{database}?host={quote(str(self.socket_dir), safe='/')}&port={PORT}"

    def start(self) -> Self:
        """Make the cluster and start its server; returns once it accepts connections."""
        bin_dir = self.bin_dir = self.bin_dir or postgres_bin_dir()
        self.directory = Path(tempfile.mkdtemp(prefix="ishiki-pg-", dir=self.parent))
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.directory, entry.pw_uid, entry.pw_gid)
        try:
            self._run(bin_dir / "initdb", "-D", str(self.data_dir), "-U", ROLE, "-A", "trust", "--no-sync",
                      "-E", "UTF8", "--locale", "C")  # fmt: skip
            fsync = "on" if self.durable else "off"
            options = f"-k {self.socket_dir} -c listen_addresses='' -p {PORT} -c fsync={fsync} -c max_connections=200"
            self._run(bin_dir / "pg_ctl", "-D", str(self.data_dir), "-o", options, "-l",
                      str(self.directory / "server.log"), "-w", "-t", "120", "start")  # fmt: skip
        except BaseException:
            self.close()
            raise
        return self

    def create_database(self, name: str) -> str:
        """A new, empty database ``name`` (lower-case letters, digits, ``_``); its URL."""
        if not _NAME.match(name):
            raise ValueError(f"{name!r} is not a plain database name")
        self.psql("postgres", f"CREATE DATABASE {name}")
        return self.url(name)

    def psql(self, database: str, sql: str) -> str:
        """Run ``sql`` with ``psql`` on ``database``; what it printed (tuples only, unaligned)."""
        assert self.bin_dir is not None, "start the server first"
        done = self._run(self.bin_dir / "psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d",
                         self.url(database), "-c", sql)  # fmt: skip
        return done.stdout

    def pids(self) -> list[int]:
        """The server's processes: the postmaster and its children."""
        postmaster = int(self.data_dir.joinpath("postmaster.pid").read_text("ascii").split()[0])
        try:
            children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text("ascii").split()
        except OSError:
            children = []
        return [postmaster, *map(int, children)]

    def pause(self) -> None:
        """Stop every process of the server (SIGSTOP): it answers nothing until ``resume``."""
        for pid in self.pids():
            os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Continue the server's processes (SIGCONT)."""
        for pid in reversed(self.pids()):
            os.kill(pid, signal.SIGCONT)

    def close(self) -> None:
        """Stop the server at once and remove its directory."""
        directory, self.directory = self.directory, None
        if directory is None:
            return
        try:
            if (directory / "data" / "postmaster.pid").exists() and self.bin_dir is not None:
                self.directory = directory
                self.resume()  # a paused server cannot stop
                self._run(self.bin_dir / "pg_ctl", "-D", str(directory / "data"), "-m", "immediate", "-w", "stop")
        finally:
            self.directory = None
            shutil.rmtree(directory, ignore_errors=True)

    def _run(self, program: Path, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(program), *args], capture_output=True, text=True, user=self._user, check=False, timeout=180,
            cwd=self.directory,
        )  # fmt: skip
        if done.returncode != 0:
            log = self.directory / "server.log" if self.directory is not None else None
            tail = log.read_text("utf-8", errors="replace")[-2000:] if log is not None and log.exists() else ""
            raise RuntimeError(f"{program.name} {' '.join(args)} failed ({done.returncode}): {done.stderr}{tail}")
        return done

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
