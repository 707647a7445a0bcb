"""Fixtures of the reliability tests: the crash harness of bench/ (imported as its bench script imports it), and
a probe of whether the host drops an inbound event it already recorded."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType

import anyio
import pytest

from ishiki_host.runtime.events import IshikiEvent, User
from ishiki_host.runtime.paths import RuntimeKey, runtime_dir
from ishiki_host.testing import profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

BENCH = Path(__file__).resolve().parents[2] / "bench"

Probe = Callable[[], Awaitable[bool]]


@pytest.fixture
def crash_harness(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``bench/_crash.py`` (``CrashPlan``, ``CrashRun``, ``CrashReport``)."""
    monkeypatch.syspath_prepend(str(BENCH))  # the bench scripts' own view: ``import _crash_model`` from their folder
    return importlib.import_module("_crash")


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """The environment for ``ishiki`` subprocesses: this one without what would point the host elsewhere."""
    hidden = ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN")
    return {k: v for k, v in os.environ.items() if k not in hidden}


@pytest.fixture
def host_drops_repeats(make_host: MakeHost) -> Probe:
    """Whether a real host records an event only once when a channel dispatches it twice (a platform
    redelivering an update whose confirmation a crash cut off, as Telegram does)."""

    async def probe() -> bool:
        th = make_host(profiles={"ana": profile_yaml()})
        event = IshikiEvent(
            kind="message.created",
            platform="fake",
            self_id="bot",
            channel_id="private:1",
            message_id="41",
            timestamp=1_700_000_000.0,
            user=User("1", "Ada"),
            content="sent once, delivered twice",
            extra={"updateId": 500_041},
        )
        async with th:
            for _ in range(2):
                delivery = await th.host.dispatch(event)
                with anyio.fail_after(10):
                    await delivery.settled()
        home = runtime_dir(th.root / "data", RuntimeKey.for_channel("ana", "fake:bot", "private:1"))
        lines = [json.loads(line) for line in (home / "facts.jsonl").read_text("utf-8").splitlines()]
        recorded = [e for e in lines if (e["data"].get("source") or {}).get("messageId") == "41"]
        return len(recorded) == 1

    return probe
