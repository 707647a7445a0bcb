"""Fixtures of the heartbeat tests: a store on a temporary file, a scripted runner, a scheduler driver, and a
real ``Host`` with its heartbeat service (``beat_host``).

Time only moves when a test says so (``FakeClock``); ``Driver.hop`` jumps to the scheduler's next wake-up and
waits (on events, never on time) until the scheduler has dealt with it; ``BeatRuntimes.run_to`` does the same on
a whole host.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.messages import ToolCall
from ishiki_host.core.tools import TrustLevel
from ishiki_host.errors import ModelUnavailable
from ishiki_host.heartbeat import HeartbeatScheduler, HeartbeatService
from ishiki_host.store import Beat, MemoryStore
from ishiki_host.testing import TestHost

# Every wait in these tests is for an event; this bound only turns a hang into a failure.
HANG = 20.0


@pytest.fixture
async def store(tmp_path: Path, fake_clock: FakeClock) -> AsyncIterator[MemoryStore]:
    """An open memory store in ``tmp_path/data``; closed and checked after the test."""
    async with await MemoryStore.open(tmp_path / "data" / "memory.db", clock=fake_clock) as opened:
        yield opened
        assert await opened.integrity_problems() == []


@dataclass
class Call:
    """One call the runner got."""

    beat_id: str
    prompt: str
    at: float


@dataclass
class ScriptedRunner:
    """A ``BeatRunner`` that records calls; beats in ``failing`` raise; with ``gate`` set, calls wait on it."""

    clock: FakeClock
    failing: set[str] = field(default_factory=set)
    gate: anyio.Event | None = None
    started: anyio.Event = field(default_factory=anyio.Event)
    calls: list[Call] = field(default_factory=list)

    async def run(self, beat: Beat, prompt: str) -> str:
        self.calls.append(Call(beat.id, prompt, self.clock.now()))
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if beat.id in self.failing:
            raise ModelUnavailable("the model is down", model="fake")
        return f"ran {beat.id}"

    def times(self, beat_id: str, tz: str) -> list[datetime]:
        """When ``beat_id`` ran, as wall times in ``tz``."""
        return [datetime.fromtimestamp(c.at, ZoneInfo(tz)) for c in self.calls if c.beat_id == beat_id]


@pytest.fixture
def runner(fake_clock: FakeClock) -> ScriptedRunner:
    """A runner that succeeds unless told otherwise."""
    return ScriptedRunner(fake_clock)


class Driver:
    """Runs a scheduler in a task group and moves the fake clock to its wake-ups."""

    def __init__(self, scheduler: HeartbeatScheduler, clock: FakeClock):
        self.scheduler = scheduler
        self.clock = clock

    async def settle(self) -> None:
        """Wait until the scheduler has no run going and is asleep until a time still ahead."""
        with anyio.fail_after(HANG):
            await self.scheduler.settled()

    async def hop(self) -> None:
        """Move the clock to the scheduler's next wake-up and let it act."""
        deadline = self.clock.next_deadline()
        assert deadline is not None
        await self.clock.advance(deadline - self.clock.now())
        await self.settle()

    async def run_until(self, when: float) -> None:
        """Hop from wake-up to wake-up until the clock reaches ``when``."""
        while (deadline := self.clock.next_deadline()) is not None and deadline <= when:
            await self.hop()
        await self.clock.advance(max(0.0, when - self.clock.now()))
        await self.settle()


@pytest.fixture
def drive(store: MemoryStore, runner: ScriptedRunner, fake_clock: FakeClock) -> Callable[..., Any]:
    """``async with drive(**scheduler_options) as driver``: a started scheduler, stopped at the end."""

    @asynccontextmanager
    async def start(**options: Any) -> AsyncIterator[Driver]:
        scheduler = HeartbeatScheduler(store, runner, clock=fake_clock, **options)
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(HANG):
                await tg.start(scheduler.serve)
            driver = Driver(scheduler, fake_clock)
            await driver.settle()
            yield driver
            tg.cancel_scope.cancel()

    return start


@dataclass(frozen=True)
class Ctx:
    """The smallest ``ToolContext``."""

    call: ToolCall = field(default_factory=lambda: ToolCall("c1", "tool"))
    turn: int | None = 1
    trust: TrustLevel = "trusted"


@pytest.fixture
def ctx() -> Ctx:
    """A tool context for calling handlers directly."""
    return Ctx()


def at(text: str, tz: str) -> float:
    """Epoch seconds of a wall time ``YYYY-MM-DD HH:MM`` in ``tz``."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(tz)).timestamp()


@pytest.fixture
def wall() -> Callable[[str, str], float]:
    """``wall("2024-03-31 02:30", "Europe/Berlin")`` as epoch seconds."""
    return at


# --- a real Host with heartbeats ------------------------------------------------------------------------


@pytest.fixture
def beats_file() -> Callable[..., str]:
    """``beats_file(*entries)``: ``heartbeats.json`` text."""

    def text(*entries: dict[str, Any]) -> str:
        return json.dumps(list(entries))

    return text


class BeatRuntimes:
    """A running ``TestHost`` and its heartbeat service, driven on the host's ``FakeClock``."""

    def __init__(self, th: TestHost):
        self.th = th
        self.clock: FakeClock = th.clock  # type: ignore[assignment]

    @property
    def service(self) -> HeartbeatService:
        service = self.th.host.heartbeats
        assert service is not None, "the host runs no heartbeats"
        return service

    @property
    def store(self) -> MemoryStore:
        return self.service.store

    async def settle(self) -> None:
        """No run going, the timer armed for a time still ahead."""
        with anyio.fail_after(HANG):
            await self.service.scheduler.settled()

    async def run_to(self, when: float) -> None:
        """Move the clock to ``when`` (a slot) and let the scheduler deal with it."""
        await self.settle()
        await self.clock.advance(when - self.clock.now())
        await self.settle()

    async def next_run(self, beat_id: str) -> float:
        beat = await self.store.heartbeats.get(beat_id)
        assert beat is not None, f"no beat {beat_id}"
        assert beat.next_run is not None, f"beat {beat_id} is not scheduled"
        return beat.next_run

    async def outcomes(self, beat_id: str) -> list[tuple[str, str | None]]:
        """The runs of a beat, oldest first."""
        return [(r.outcome, r.output) for r in reversed(await self.store.heartbeats.runs(beat_id, limit=100))]


@pytest.fixture
def beat_host(make_host: Any) -> Callable[..., Any]:
    """``async with beat_host(profiles=..., files=..., host=...) as bh``: a started host with heartbeats."""

    @asynccontextmanager
    async def start(**options: Any) -> AsyncIterator[BeatRuntimes]:
        async with make_host(**options) as th:
            driver = BeatRuntimes(th)
            await driver.settle()
            yield driver

    return start
