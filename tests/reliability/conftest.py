"""Fixtures of the reliability tests: the crash harness of bench/ (imported as its bench script imports it), a
watch on the logs, a disk that fills up, the harness's rational model on ``fake_openai``, and a real host on
the fake Telegram Bot API."""

from __future__ import annotations

import errno
import importlib
import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.testing import FakeOpenAIServer, TestHost, models_yaml, write_config

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def crash_harness(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``bench/_crash.py`` (``CrashPlan``, ``CrashRun``, ``CrashReport``)."""
    monkeypatch.syspath_prepend(str(BENCH))  # the bench scripts' own view: ``import _crash_model`` from their folder
    return importlib.import_module("_crash")


CrashRunner = Callable[[Any], Awaitable[tuple[Any, str]]]


@pytest.fixture
def crash_run(
    crash_harness: ModuleType, ishiki_bin: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> CrashRunner:
    """Run a ``CrashPlan`` in ``tmp_path``; the report and its printed summary. A life still running at the plan's
    cap fails the test as "timed out": that is no verdict on the properties, so no property is said to break."""

    async def run(plan: Any) -> tuple[Any, str]:
        report = await crash_harness.CrashRun(plan, tmp_path / "crash", ishiki_bin, env=subprocess_env).run()
        summary = "\n".join(report.lines())
        print(summary)
        late = [
            f"life {life.index} ({life.trigger}), {life.seconds:.0f} s; see {life.log}" for life in report.timed_out()
        ]
        if late:
            pytest.fail(f"timed out: {len(late)} life(s) still running at {plan.life_cap:g} s:\n" + "\n".join(late))
        return report, summary

    return run


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """The environment for ``ishiki`` subprocesses: this one without what would point the host elsewhere."""
    hidden = ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN")
    return {k: v for k, v in os.environ.items() if k not in hidden}


class LogWatch(logging.Handler):
    """Every log record of the test, and a wait for the n-th one whose message contains a text."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self._changed = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self._changed.set()
        self._changed = anyio.Event()

    def count(self, text: str) -> int:
        """How many messages so far contain ``text``."""
        return sum(1 for message in self.messages if text in message)

    async def wait_for(self, text: str, count: int = 1, *, deadline: float = 10.0) -> None:
        """Until ``count`` messages contain ``text``."""
        with anyio.fail_after(deadline):
            while self.count(text) < count:
                await self._changed.wait()


@pytest.fixture
def log_watch() -> Iterator[LogWatch]:
    """A ``LogWatch`` on the root logger (at DEBUG) for the length of the test."""
    watch = LogWatch()
    root = logging.getLogger()
    level = root.level
    root.addHandler(watch)
    root.setLevel(logging.DEBUG)
    yield watch
    root.removeHandler(watch)
    root.setLevel(level)


class FullDisk:
    """``os.write`` to files under ``root`` fails with ENOSPC while ``full`` (the write seam of the fact log).

    The write syscall is the OS edge: the fact log, like any program, learns that the disk is full there.
    Sockets and files elsewhere are written as usual.
    """

    def __init__(self, root: Path, write: Callable[[int, Any], int]):
        self.root = str(root.resolve())
        self.full = False
        self.refused = 0
        self._write = write

    def write(self, fd: int, data: Any) -> int:
        if self.full:
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                target = ""
            if target.startswith(self.root + os.sep):
                self.refused += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._write(fd, data)


@pytest.fixture
def full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FullDisk:
    """A disk under ``tmp_path`` that fills up when ``full_disk.full = True``."""
    disk = FullDisk(tmp_path, os.write)
    monkeypatch.setattr(os, "write", disk.write)
    return disk


TELEGRAM_BOT = "7000000001"


@pytest.fixture
def rational_model(crash_harness: ModuleType, fake_openai: FakeOpenAIServer) -> Any:
    """The crash harness's ``RationalModel`` answering on ``fake_openai``: one ``ack <token>`` per message token
    (``q<chat>x<seq>``) no earlier send acknowledged, else ``finish``."""
    model = importlib.import_module("_crash_model").RationalModel()
    fake_openai.default = model
    return model


@pytest.fixture
def telegram_bot(tmp_path: Path, fake_openai: FakeOpenAIServer, fake_clock: FakeClock) -> Callable[..., TestHost]:
    """``telegram_bot(server, **account)``: a ``TestHost`` on the fake clock whose one profile (the built-in
    engines) claims every chat of the fake Bot API ``server``'s bot; the model is ``fake_openai``."""

    def make(server: Any, *, models: str | None = None, profile: str = "", **account: Any) -> TestHost:
        keys = {"token": server.token, "api_base": server.url, "poll_timeout": 5, "backoff_max": 4, **account}
        entry = "\n".join(f"        {key}: {json.dumps(value)}" for key, value in keys.items())
        host = f"reload_interval_seconds: 0\nchannels:\n  telegram:\n    accounts:\n      -\n{entry}\n"
        claims = f"model: default\nchannels:\n  telegram:{TELEGRAM_BOT}: ['*']\n{profile}"
        root = write_config(tmp_path / "bot", profiles={"ana": claims}, models=models or models_yaml(fake_openai),
                            host=host)  # fmt: skip
        return TestHost(root, clock=fake_clock, shutdown_grace=2.0)

    return make
