"""Real ``ishiki run`` hosts of one fleet (one PostgreSQL ``store``) behind the fake Bot API's load balancer.

``Fleet`` writes a config dir per host (its own port, the same store URL and bot token, webhook mode, the
fake model server), starts ``ishiki run`` on each and points the fake's round-robin ``proxy`` at the live ones;
``kill`` (SIGKILL) and ``start`` change who is behind it, and ``logged`` counts lines of the hosts' logs.
``inbox_puts`` counts the events that went through the fleet's inbox (the sequence of its rows), ``leases``
says which host holds each runtime's lease, and ``tree_cpu`` reads the CPU time of processes and their
children from ``/proc``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Self

import anyio
import psycopg
from _fake_server import models_yaml
from ishiki_channel_telegram.testing import PUBLIC_URL, FakeBotAPI

from ishiki_host.testing import IshikiProcess, free_ports

__all__ = [
    "LEASE_SECONDS",
    "TOKEN",
    "Fleet",
    "LeaseWatch",
    "children",
    "cpu_seconds",
    "deliver_all",
    "inbox_puts",
    "leases",
    "machine_ticks",
    "tree_cpu",
]

TOKEN = "7000000003:AABenchTokenForTheFleetBotAPI_0123456789"
LEASE_SECONDS = 2.0  # the default of the benches: a takeover soon after a crash
POLL_SECONDS = 0.2


def write_config(
    root: Path, name: str, port: int, bot: FakeBotAPI, model_url: str, concurrency: int, lease: float
) -> Path:
    """One host's config dir: the fleet's store (``${ISHIKI_STORE}``), its own port, the bot in webhook mode."""
    files = {
        "ishiki.yaml": (
            "reload_interval_seconds: 0\nshutdown_grace_seconds: 5\nlog_level: warning\n"
            "store: ${ISHIKI_STORE}\n"
            f"fleet: {{name: {name}, lease_seconds: {lease}, poll_seconds: {POLL_SECONDS}}}\n"
            f"http: {{listen: '127.0.0.1:{port}', public_url: '{PUBLIC_URL}'}}\n"
            "channels:\n  telegram:\n    accounts:\n"
            f"      - {{token: '${{TELEGRAM_BOT_TOKEN}}', api_base: '{bot.url}', mode: webhook}}\n"
        ),
        "models.yaml": models_yaml(model_url, concurrency),
        "profiles/ana/profile.yml": f"model: default\nchannels:\n  telegram:{TOKEN.split(':')[0]}: ['*']\n",
        "profiles/ana/persona.md": "You are Ana. Acknowledge every message.\n",
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return root


class Fleet:
    """``count`` hosts on ``store_url``, each in its own config dir under ``base`` (see the module docstring)."""

    def __init__(
        self,
        base: Path,
        count: int,
        bot: FakeBotAPI,
        store_url: str,
        model_url: str,
        concurrency: int,
        lease: float = LEASE_SECONDS,
    ):
        self.bot = bot
        self.names = [f"h{index}" for index in range(count)]
        self.ports = free_ports(count)
        self.roots = [
            write_config(base / name, name, port, bot, model_url, concurrency, lease)
            for name, port in zip(self.names, self.ports, strict=True)
        ]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.env = {**env, "TELEGRAM_BOT_TOKEN": TOKEN, "ISHIKI_STORE": store_url}
        self.hosts: list[IshikiProcess | None] = [None] * count
        self._stack = AsyncExitStack()
        self._all: list[IshikiProcess] = []

    async def start(self, index: int) -> None:
        """Start host ``index`` and wait until its webhook is set and checked (then it takes deliveries)."""
        checked = self.bot.count("getWebhookInfo")
        host = IshikiProcess(self.roots[index], env=self.env)
        self.hosts[index] = await self._stack.enter_async_context(host)
        self._all.append(host)
        try:
            await self.bot.until(lambda: self.bot.count("getWebhookInfo") > checked, deadline=120)
        except TimeoutError:
            sys.stderr.write(host.stderr())
            raise
        self.balance()

    async def kill(self, index: int) -> None:
        """SIGKILL host ``index`` and take it out of the load balancer, as its health check would."""
        host = self.hosts[index]
        assert host is not None
        self.hosts[index] = None
        self.balance()
        await host.kill()

    def balance(self) -> None:
        """Point the fake's load balancer at the live hosts, round-robin."""
        urls = [f"http://127.0.0.1:{port}" for port, host in zip(self.ports, self.hosts, strict=True) if host]
        if urls:
            self.bot.proxy(PUBLIC_URL, *urls)

    def pids(self) -> list[int]:
        """The process ids of the live hosts."""
        return [host.pid for host in self.hosts if host is not None]

    def logged(self, words: str) -> int:
        """How many lines holding ``words`` the hosts (live or killed) logged so far."""
        return sum(host.stderr().count(words) for host in self._all)

    def holder_index(self, holder: str) -> int:
        """Which host a lease's holder (``h1/1a2b3c4d``) is."""
        return self.names.index(holder.split("/", 1)[0])

    async def __aenter__(self) -> Self:
        for index in range(len(self.hosts)):
            await self.start(index)  # one after the other: the first brings the database to the schema
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for host in self.hosts:
            if host is not None and host.returncode is None:
                await host.stop()  # SIGTERM: a clean stop gives its leases up
        await self._stack.aclose()


async def deliver_all(bot: FakeBotAPI, concurrency: int) -> None:
    """Post every queued update to the webhook until none is left (a host's 503 leaves one queued)."""
    while bot.updates:
        await bot.deliver(concurrency=concurrency)


def inbox_puts(url: str) -> int:
    """How many events were ever put in the fleet's inbox (its ``seq`` sequence: not rolled back, not reused)."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT last_value, is_called FROM ishiki_inbox_seq_seq").fetchone()
    assert row is not None
    return int(row[0]) if row[1] else 0


def leases(url: str) -> dict[int, str]:
    """The holder of each live runtime lease, by chat id (the runtime key's last part)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT name, holder FROM ishiki_leases WHERE name LIKE 'runtime:%' AND expires_at > clock_timestamp()"
        ).fetchall()
    return {int(name.rsplit(":", 1)[1]): holder for name, holder in rows}


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` used so far; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


def children(pid: int) -> list[int]:
    """The live children of ``pid``, whichever of its threads started them."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(child) for child in (task / "children").read_text(encoding="ascii").split())
        except OSError:
            continue
    return sorted(found)


def tree_cpu(pids: Iterable[int]) -> dict[int, float]:
    """The CPU time so far of each process of ``pids`` and of its children, by pid (a backend that ended
    between two readings is missing from the later one: its share is lost, a small undercount)."""
    seen: dict[int, float] = {}
    for pid in pids:
        for each in (pid, *children(pid)):
            seen[each] = cpu_seconds(each)
    return seen


class LeaseWatch:
    """The intervals between renewals of each runtime lease, read from ``ishiki_leases`` every ``every``
    seconds while ``run`` runs (each renewal moves ``expires_at`` to the database's now + the lease)."""

    def __init__(self, url: str, every: float = 0.1):
        self.url = url
        self.every = every
        self._last: dict[tuple[str, int], float] = {}
        self.intervals: list[float] = []

    async def run(self) -> None:
        """Sample until cancelled."""
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            while True:
                cursor = await conn.execute(
                    "SELECT name, token, extract(epoch FROM expires_at)::float8 FROM ishiki_leases "
                    "WHERE name LIKE 'runtime:%'"
                )
                for name, token, expires in await cursor.fetchall():
                    last = self._last.get((name, token))
                    if last is not None and expires > last:
                        self.intervals.append(expires - last)
                    self._last[(name, token)] = expires
                await anyio.sleep(self.every)

    def longest(self) -> float:
        """The longest interval between two renewals of one grant seen (0 with none)."""
        return max(self.intervals, default=0.0)

    def over(self, seconds: float) -> int:
        """How many renewals came more than ``seconds`` after the one before."""
        return sum(1 for interval in self.intervals if interval > seconds)


def machine_ticks() -> tuple[int, int]:
    """The whole machine's busy and total CPU ticks so far (``/proc/stat``): everyone's processes, not only ours."""
    fields = [int(value) for value in Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)
