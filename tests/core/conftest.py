"""Fixtures of the agent-core tests: an open fact log on the fake clock, and an agent factory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.core.agent import Agent
from ishiki_host.core.bus import EventBus
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.hooks import AgentHooks
from ishiki_host.core.model import LanguageModel
from ishiki_host.core.tools import Tool
from ishiki_host.core.turns import Turn, TurnSetup


class SyncCounter:
    """An injectable syncer: really fsyncs, and counts."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, fd: int) -> None:
        import os

        self.calls += 1
        os.fsync(fd)


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "runtime" / "facts.jsonl"


@pytest.fixture
def syncer() -> SyncCounter:
    return SyncCounter()


@pytest.fixture
async def log(log_path: Path, fake_clock: FakeClock, syncer: SyncCounter, anyio_backend: str) -> AsyncIterator[FactLog]:
    opened = await FactLog.open(log_path, clock=fake_clock, syncer=syncer)
    yield opened
    await opened.close()


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


MakeAgent = Callable[..., Agent]


@pytest.fixture
def make_agent(log: FactLog, bus: EventBus, fake_clock: FakeClock) -> MakeAgent:
    """``make_agent(model, tools=[...], system="...", hooks=[...], **agent_kwargs)``."""

    def make(
        model: LanguageModel,
        *,
        tools: Sequence[Tool] = (),
        system: str = "You are a test.",
        hooks: Sequence[AgentHooks] = (),
        **kwargs: Any,
    ) -> Agent:
        def setup(turn: Turn) -> TurnSetup:
            return TurnSetup(system=system, tools=tools)

        kwargs.setdefault("tool_timeout", None)
        return Agent(log, model, setup, hooks=hooks, bus=bus, clock=fake_clock, **kwargs)

    return make


class Gate:
    """A tool handler that reports it was entered and waits until the test opens it."""

    def __init__(self, answer: str = "opened") -> None:
        import anyio

        self.entered = anyio.Event()
        self.opened = anyio.Event()
        self.answer = answer
        self.cancelled = False

    async def __call__(self, arguments: Any, context: Any) -> str:
        import anyio

        self.entered.set()
        try:
            await self.opened.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return self.answer


@pytest.fixture
def gate() -> Gate:
    return Gate()
