"""Call priority: who may call a provider next.

Each provider has ``max_concurrency`` slots. A waiting ``interactive`` call (a turn a person started) always
goes before a waiting ``background`` call (summarizer, heartbeats, compaction, judges); within one priority
calls go first come, first served. A background call also waits until the provider has had no interactive
call in flight or waiting for ``interactive_grace_seconds``, so background work never slows down a
conversation that is still going; after ``max_background_wait_seconds`` it stops deferring (it still queues
behind waiting interactive calls) so busy chats cannot starve it forever.

One scheduler serves a whole gateway. All time comes from the injected clock; a waiter that is cancelled
leaves the queue (and gives back a slot it was just granted).

``SlotSource`` is where a gateway's calls take their slots: a ``Scheduler`` of its own, or (a worker of ``ishiki
run --workers N`` with ``scheduler.across_workers: lease``) its supervisor's scheduler, leased over the link.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import anyio

from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.model import Priority

__all__ = ["Scheduler", "SchedulerConfig", "SlotSource"]


class SlotSource(Protocol):
    """Where a gateway's calls take their slots (a ``Scheduler``, or a worker's leases from its supervisor)."""

    def slot(self, provider: str, limit: int, priority: Priority) -> AbstractAsyncContextManager[None]:
        """Hold one of ``provider``'s ``limit`` slots for the body of the ``async with``; waiting for it ends
        cleanly when cancelled (no slot is left held)."""
        ...

    def status(self) -> dict[str, Json]:
        """Per provider: ``max_concurrency``, ``in_flight``, ``waiting_interactive``, ``waiting_background``,
        ``granted`` (the calls granted so far)."""
        ...


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
    head: anyio.Event = field(default_factory=anyio.Event)  # set when it becomes the oldest background waiter


@dataclass
class _Lane:
    """The queues and slots of one provider: interactive and background waiters, each first come, first
    served. Only the oldest background waiter watches the lane (for the end of its deferral); the others wait
    for their turn to be oldest, so a change wakes one waiter, not all of them."""

    limit: int
    in_flight: int = 0
    interactive_in_flight: int = 0
    interactive: deque[_Waiter] = field(default_factory=deque)
    background: deque[_Waiter] = field(default_factory=deque)
    last_interactive: float | None = None
    changed: anyio.Event = field(default_factory=anyio.Event)
    granted_total: int = 0

    def notify(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def queue(self, waiter: _Waiter) -> deque[_Waiter]:
        return self.interactive if waiter.priority == "interactive" else self.background

    def leave(self, waiter: _Waiter) -> None:
        """Take ``waiter`` out of its queue (granted or cancelled); the next background waiter may now be head."""
        queue = self.queue(waiter)
        was_head = bool(queue) and queue[0] is waiter
        queue.remove(waiter)
        if was_head and queue is self.background and queue:
            queue[0].head.set()


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
        if lane.interactive_in_flight or lane.interactive:
            return aged
        if lane.last_interactive is None:
            return 0.0
        return max(0.0, min(aged, lane.last_interactive + self.config.interactive_grace_seconds - now))

    def _grant(self, lane: _Lane) -> None:
        """Grant free slots: interactive waiters first, then background waiters whose deferral is over (the
        oldest has waited longest, so when it must still defer, every younger one must too)."""
        while lane.in_flight < lane.limit:
            if lane.interactive:
                nxt = lane.interactive[0]
            elif lane.background and self._background_wait(lane, lane.background[0]) <= 0:
                nxt = lane.background[0]
            else:
                return
            lane.leave(nxt)
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

    async def _wait_change(self, lane: _Lane, waiter: _Waiter, seconds: float | None) -> None:
        """Until the lane changes, the waiter is granted, or ``seconds`` of clock time pass."""
        changed = lane.changed
        async with anyio.create_task_group() as tg:

            async def until(event: anyio.Event) -> None:
                await event.wait()
                tg.cancel_scope.cancel()

            async def alarm(delay: float) -> None:
                await self.clock.sleep(delay)
                tg.cancel_scope.cancel()

            tg.start_soon(until, changed)
            tg.start_soon(until, waiter.grant)
            if seconds is not None:
                tg.start_soon(alarm, seconds)

    async def _wait_background(self, lane: _Lane, waiter: _Waiter) -> None:
        """One wait of a background waiter: the oldest watches the lane and its deferral; the others wait until
        they are the oldest (or granted)."""
        if lane.background and lane.background[0] is waiter:
            await self._wait_change(lane, waiter, self._background_wait(lane, waiter) or None)
        else:
            waiter.head = anyio.Event()
            if not (lane.background and lane.background[0] is waiter):
                async with anyio.create_task_group() as tg:

                    async def until(event: anyio.Event) -> None:
                        await event.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(until, waiter.head)
                    tg.start_soon(until, waiter.grant)

    @asynccontextmanager
    async def slot(self, provider: str, limit: int, priority: Priority) -> AsyncIterator[None]:
        """Hold one of ``provider``'s ``limit`` slots for the body of the ``async with``."""
        lane = self._lane(provider, limit)
        waiter = _Waiter(priority, next(self._seq), self.clock.monotonic())
        lane.queue(waiter).append(waiter)
        try:
            self._grant(lane)
            while not waiter.granted:
                if priority == "interactive":
                    # Only a grant changes anything for an interactive waiter: it waits for its own event
                    # (a shared one would wake every waiter on every change, quadratic under load).
                    await waiter.grant.wait()
                    continue
                await self._wait_background(lane, waiter)
                self._grant(lane)
        except BaseException:
            if waiter.granted:
                self._release(lane, waiter)
            else:
                lane.leave(waiter)
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
                "waiting_interactive": len(lane.interactive),
                "waiting_background": len(lane.background),
                "granted": lane.granted_total,
            }
            for provider, lane in self._lanes.items()
        }
