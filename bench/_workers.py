"""A real ``ishiki run [--workers N]`` on the Telegram package's loopback fake Bot API, for the workers benches.

``write_config`` makes a config dir whose one profile answers every direct message to the fake's bot with one
call to the fake model server; ``running_host`` starts ``ishiki run`` on it (its own process; with ``--workers
N`` a supervisor and N worker processes) and terminates it when the block ends; ``host_rss`` is the resident
memory of that process and its children (the workers) and ``cpu_seconds`` a process's CPU time, from ``/proc``;
``ChatReplies`` notes when each chat got its first answer.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
from _fake_server import models_yaml
from ishiki_channel_telegram.testing import FakeBotAPI, private_chat, user

TOKEN = "7000000002:AABenchTokenForTheLoopbackBotAPI_012345"
ISHIKI = Path(sys.executable).with_name("ishiki")


def write_config(root: Path, bot: FakeBotAPI, model_url: str, concurrency: int) -> Path:
    """A config dir whose profile answers every direct message on the fake Bot API's bot."""
    files = {
        "ishiki.yaml": (
            "reload_interval_seconds: 0\nshutdown_grace_seconds: 5\nlog_level: warning\nfsync: turn\n"
            f"channels:\n  telegram:\n    accounts:\n      - token: {TOKEN}\n        api_base: {bot.url}\n"
            "        poll_timeout: 1\n"
        ),
        "models.yaml": models_yaml(model_url, concurrency),
        "profiles/ana/profile.yml": f"model: default\nchannels:\n  telegram:{TOKEN.split(':')[0]}: ['*']\n",
        "profiles/ana/persona.md": "You are Ana. Acknowledge every message.\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return root


@asynccontextmanager
async def running_host(root: Path, workers: int) -> AsyncIterator[anyio.abc.Process]:
    """``ishiki run root --workers workers`` until the block ends (then terminated, as systemd stops it)."""
    process = await anyio.open_process(
        [str(ISHIKI), "run", str(root), "--workers", str(workers)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield process
    finally:
        process.terminate()
        with anyio.fail_after(60):
            await process.wait()


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (a supervisor's workers), from ``/proc``."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text(encoding="ascii")
    except OSError:
        return []
    return sorted(int(child) for child in text.split())


def host_rss(pid: int) -> int:
    """The resident bytes of process ``pid`` and its children together."""
    total = 0
    for each in (pid, *children(pid)):
        try:
            status = Path(f"/proc/{each}/status").read_text(encoding="ascii")
        except OSError:
            continue  # it ended meanwhile
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` used so far; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


class ChatReplies:
    """When each chat of the fake Bot API got its first answer (``perf_counter`` seconds), noted as it came."""

    def __init__(self, bot: FakeBotAPI):
        self.bot = bot
        self.first: dict[int, float] = {}
        self._seen = len(bot.sent)

    def _note(self) -> None:
        now = time.perf_counter()
        sent = self.bot.sent
        for record in sent[self._seen :]:
            self.first.setdefault(record.chat_id, now)
        self._seen = len(sent)

    async def until_answered(self, chats: Iterable[int], *, deadline: float = 600) -> None:
        """Until every chat of ``chats`` got an answer (``deadline``: a safety net)."""
        wanted = set(chats)

        def answered() -> bool:
            self._note()
            return wanted <= self.first.keys()

        await self.bot.until(answered, deadline=deadline)


def push_hello(bot: FakeBotAPI, chat: int) -> float:
    """A direct message from user ``chat`` in its own chat; when it was queued (``perf_counter``)."""
    bot.push_message(private_chat(user(chat, f"P{chat}")), f"hello {chat}")
    return time.perf_counter()
