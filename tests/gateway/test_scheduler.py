"""Call priority under a fake clock: slots, interactive first, FIFO, grace period, aging, cancellation."""

from __future__ import annotations

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from anyio.abc import TaskGroup

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import Priority
from ishiki_host.gateway.scheduler import Scheduler, SchedulerConfig

pytestmark = pytest.mark.anyio


class Calls:
    """Tasks that take a slot, log their name, and hold the slot until released."""

    def __init__(self, scheduler: Scheduler, tg: TaskGroup, limit: int = 1):
        self.scheduler, self.tg, self.limit = scheduler, tg, limit
        self.started: list[str] = []
        self.release: dict[str, anyio.Event] = {}

    async def start(self, name: str, priority: Priority, provider: str = "p") -> None:
        self.release[name] = anyio.Event()
        self.tg.start_soon(self._run, name, priority, provider)
        await wait_all_tasks_blocked()

    async def _run(self, name: str, priority: Priority, provider: str) -> None:
        async with self.scheduler.slot(provider, self.limit, priority):
            self.started.append(name)
            await self.release[name].wait()

    async def finish(self, name: str) -> None:
        self.release[name].set()
        await wait_all_tasks_blocked()


async def test_concurrency_cap_and_fifo(fake_clock: FakeClock) -> None:
    scheduler = Scheduler(fake_clock)
    async with anyio.create_task_group() as tg:
        calls = Calls(scheduler, tg, limit=2)
        for name in ("i1", "i2", "i3", "i4"):
            await calls.start(name, "interactive")
        assert calls.started == ["i1", "i2"]
        assert scheduler.status()["p"]["waiting_interactive"] == 2
        await calls.finish("i2")
        assert calls.started == ["i1", "i2", "i3"]
        await calls.finish("i1")
        assert calls.started == ["i1", "i2", "i3", "i4"]
        for name in ("i3", "i4"):
            await calls.finish(name)
    assert scheduler.status()["p"]["in_flight"] == 0


async def test_interactive_goes_first_and_background_waits_the_grace(fake_clock: FakeClock) -> None:
    scheduler = Scheduler(fake_clock, SchedulerConfig(interactive_grace_seconds=2.0))
    async with anyio.create_task_group() as tg:
        calls = Calls(scheduler, tg)
        await calls.start("turn-1", "interactive")
        await calls.start("summary", "background")
        await calls.start("turn-2", "interactive")
        await calls.finish("turn-1")
        assert calls.started == ["turn-1", "turn-2"]
        await calls.finish("turn-2")
        assert calls.started == ["turn-1", "turn-2"]  # the grace period has begun
        await fake_clock.advance(1.5)
        assert "summary" not in calls.started
        await fake_clock.advance(0.5)
        assert calls.started == ["turn-1", "turn-2", "summary"]
        await calls.finish("summary")


async def test_new_interactive_call_restarts_the_grace(fake_clock: FakeClock) -> None:
    scheduler = Scheduler(fake_clock, SchedulerConfig(interactive_grace_seconds=2.0))
    async with anyio.create_task_group() as tg:
        calls = Calls(scheduler, tg, limit=4)
        await calls.start("turn-1", "interactive")
        await calls.finish("turn-1")
        await calls.start("beat", "background")
        await fake_clock.advance(1.5)
        await calls.start("turn-2", "interactive")
        await calls.finish("turn-2")
        await fake_clock.advance(1.5)
        assert "beat" not in calls.started
        await fake_clock.advance(0.5)
        assert calls.started[-1] == "beat"
        await calls.finish("beat")


async def test_background_runs_at_once_without_interactive_traffic(fake_clock: FakeClock) -> None:
    scheduler = Scheduler(fake_clock)
    async with anyio.create_task_group() as tg:
        calls = Calls(scheduler, tg, limit=2)
        await calls.start("b1", "background")
        await calls.start("b2", "background")
        await calls.start("b3", "background")
        assert calls.started == ["b1", "b2"]
        await calls.finish("b1")
        assert calls.started == ["b1", "b2", "b3"]
        await calls.finish("b2")
        await calls.finish("b3")


async def test_providers_have_separate_lanes(fake_clock: FakeClock) -> None:
    scheduler = Scheduler(fake_clock)
    async with anyio.create_task_group() as tg:
        calls = Calls(scheduler, tg)
        await calls.start("p-turn", "interactive", provider="p")
        await calls.start("q-summary", "background", provider="q")
        assert calls.started == ["p-turn", "q-summary"]
        await calls.finish("p-turn")
        await calls.finish("q-summary")


async def test_background_is_not_starved(fake_clock: FakeClock) -> None:
    scheduler = Scheduler(fake_clock, SchedulerConfig(interactive_grace_seconds=2.0, max_background_wait_seconds=30))
    async with anyio.create_task_group() as tg:
        calls = Calls(scheduler, tg, limit=2)
        await calls.start("long-turn", "interactive")
        await calls.start("summary", "background")
        await fake_clock.advance(29)
        assert calls.started == ["long-turn"]
        await fake_clock.advance(1)
        assert calls.started == ["long-turn", "summary"]
        await calls.finish("long-turn")
        await calls.finish("summary")


async def _cancellable(
    scheduler: Scheduler, priority: Priority, scope: anyio.CancelScope, done: anyio.Event, log: list[str]
) -> None:
    with scope:
        async with scheduler.slot("p", 1, priority):
            log.append("cancelled-one")
    done.set()


async def test_a_cancelled_waiter_leaves_the_queue(fake_clock: FakeClock) -> None:
    scheduler = Scheduler(fake_clock)
    async with anyio.create_task_group() as tg:
        calls = Calls(scheduler, tg)
        await calls.start("holder", "interactive")
        scope, done = anyio.CancelScope(), anyio.Event()
        tg.start_soon(_cancellable, scheduler, "interactive", scope, done, calls.started)
        await wait_all_tasks_blocked()
        await calls.start("later", "interactive")
        assert scheduler.status()["p"]["waiting_interactive"] == 2
        scope.cancel()
        await done.wait()
        assert scheduler.status()["p"]["waiting_interactive"] == 1
        await calls.finish("holder")
        assert calls.started == ["holder", "later"]
        await calls.finish("later")


async def test_a_background_waiter_cancelled_during_its_grace_sleep(fake_clock: FakeClock) -> None:
    scheduler = Scheduler(fake_clock)
    async with anyio.create_task_group() as tg:
        calls = Calls(scheduler, tg)
        await calls.start("turn", "interactive")
        await calls.finish("turn")
        scope, done = anyio.CancelScope(), anyio.Event()
        tg.start_soon(_cancellable, scheduler, "background", scope, done, calls.started)
        await fake_clock.wait_for_sleepers()
        scope.cancel()
        await done.wait()
        assert fake_clock.sleepers == 0
        assert scheduler.status()["p"]["waiting_background"] == 0
        await calls.start("next", "interactive")
        assert calls.started == ["turn", "next"]
        await calls.finish("next")


def test_config_from_mapping() -> None:
    config = SchedulerConfig.from_mapping({"interactive_grace_seconds": 0.5})
    assert (config.interactive_grace_seconds, config.max_background_wait_seconds) == (0.5, 60.0)
