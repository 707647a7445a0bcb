"""Call priority: who may call a provider next.

Each provider has ``max_concurrency`` slots. A waiting ``interactive`` call (a turn a person started) always
goes before a waiting ``background`` call (summarizer, heartbeats, compaction, judges); within one priority
calls go first come, first served. A background call also waits until the provider has had no interactive
call in flight or waiting for ``interactive_grace_seconds``, so background work never slows down a
conversation that is still going; after ``max_background_wait_seconds`` it stops deferring (it still queues
behind waiting interactive calls) so busy chats cannot starve it forever.

One scheduler serves a whole gateway. All time comes from the injected clock; a waiter that is cancelled
leaves the queue (and gives back a slot it was just granted).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.model import Priority

__all__ = ["Scheduler", "SchedulerConfig"]


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """The ``scheduler:`` section of ishiki.yaml."""

    interactive_grace_seconds: float = 2.0
    max_background_wait_seconds: float = 60.0

    @classmethod
    def from_mapping(cls, data: Mapping[str, Json]) -> SchedulerConfig:
        """From the ``scheduler:`` mapping (``interactive_grace_seconds``, ``max_background_wait_seconds``)."""
        values = {
            key: float(data[key]) for key in ("interactive_grace_seconds", "max_background_wait_seconds") if key in data
        }
        return cls(**values)


@dataclass(eq=False)
class _Waiter:
    priority: Priority
    seq: int
    since: float
    granted: bool = False
    grant: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class _Lane:
    """The queue and slots of one provider."""

    limit: int
    in_flight: int = 0
    interactive_in_flight: int = 0
    waiting: list[_Waiter] = field(default_factory=list)
    last_interactive: float | None = None
    changed: anyio.Event = field(default_factory=anyio.Event)
    granted_total: int = 0

    def notify(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()


class Scheduler:
    """Slots per provider, interactive before background (see the module docstring)."""

    def __init__(self, clock: Clock, config: SchedulerConfig | None = None):
        self.clock = clock
        self.config = config or SchedulerConfig()
        self._lanes: dict[str, _Lane] = {}
        self._seq = itertools.count()

    def _lane(self, provider: str, limit: int) -> _Lane:
        lane = self._lanes.get(provider)
        if lane is None:
            lane = self._lanes[provider] = _Lane(limit=max(1, limit))
        return lane

    def _background_wait(self, lane: _Lane, waiter: _Waiter) -> float:
        """Seconds this background waiter must still defer to interactive traffic (0: it may go)."""
        now = self.clock.monotonic()
        aged = self.config.max_background_wait_seconds - (now - waiter.since)
        if aged <= 0:
            return 0.0
        if lane.interactive_in_flight or any(w.priority == "interactive" for w in lane.waiting):
            return aged
        if lane.last_interactive is None:
            return 0.0
        return max(0.0, min(aged, lane.last_interactive + self.config.interactive_grace_seconds - now))

    def _grant(self, lane: _Lane) -> None:
        """Grant free slots: interactive waiters first, then background waiters whose deferral is over."""
        while lane.in_flight < lane.limit:
            nxt = next((w for w in lane.waiting if w.priority == "interactive"), None)
            if nxt is None:
                nxt = next((w for w in lane.waiting if self._background_wait(lane, w) <= 0), None)
            if nxt is None:
                return
            lane.waiting.remove(nxt)
            nxt.granted = True
            nxt.grant.set()
            lane.in_flight += 1
            lane.granted_total += 1
            if nxt.priority == "interactive":
                lane.interactive_in_flight += 1
                lane.last_interactive = self.clock.monotonic()
            lane.notify()

    def _release(self, lane: _Lane, waiter: _Waiter) -> None:
        lane.in_flight -= 1
        if waiter.priority == "interactive":
            lane.interactive_in_flight -= 1
            lane.last_interactive = self.clock.monotonic()
        self._grant(lane)
        lane.notify()

    async def _wait_change(self, lane: _Lane, seconds: float | None) -> None:
        """Until the lane changes, or ``seconds`` of clock time pass."""
        changed = lane.changed
        if seconds is None:
            await changed.wait()
            return
        async with anyio.create_task_group() as tg:

            async def alarm() -> None:
                await self.clock.sleep(seconds)
                tg.cancel_scope.cancel()

            tg.start_soon(alarm)
            await changed.wait()
            tg.cancel_scope.cancel()

    @asynccontextmanager
    async def slot(self, provider: str, limit: int, priority: Priority) -> AsyncIterator[None]:
        """Hold one of ``provider``'s ``limit`` slots for the body of the ``async with``."""
        lane = self._lane(provider, limit)
        waiter = _Waiter(priority, next(self._seq), self.clock.monotonic())
        lane.waiting.append(waiter)
        try:
            self._grant(lane)
            while not waiter.granted:
                if priority == "interactive":
                    # Only a grant changes anything for an interactive waiter: it waits for its own event
                    # (a shared one would wake every waiter on every change, quadratic under load).
                    await waiter.grant.wait()
                    continue
                await self._wait_change(lane, self._background_wait(lane, waiter) or None)
                self._grant(lane)
        except BaseException:
            if waiter.granted:
                self._release(lane, waiter)
            else:
                lane.waiting.remove(waiter)
                self._grant(lane)
                lane.notify()
            raise
        try:
            yield
        finally:
            self._release(lane, waiter)

    def status(self) -> dict[str, Json]:
        """Per provider: slots, in flight, waiting by priority, calls granted so far."""
        return {
            provider: {
                "max_concurrency": lane.limit,
                "in_flight": lane.in_flight,
                "waiting_interactive": sum(1 for w in lane.waiting if w.priority == "interactive"),
                "waiting_background": sum(1 for w in lane.waiting if w.priority == "background"),
                "granted": lane.granted_total,
            }
            for provider, lane in self._lanes.items()
        }
