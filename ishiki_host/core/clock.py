"""Injectable time: every wait, timestamp and deadline in the host goes through a ``Clock``.

``SystemClock`` is the real one. ``FakeClock`` only moves when a test calls ``advance``, which wakes exactly
the sleepers whose deadline has passed, so tests never sleep to wait for something. ``run_with_deadline``
bounds an awaitable by the clock's time.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar, runtime_checkable

import anyio

__all__ = ["Clock", "DeadlineExceeded", "FakeClock", "SystemClock", "run_with_deadline"]

T = TypeVar("T")


@runtime_checkable
class Clock(Protocol):
    """What the host needs of time."""

    def now(self) -> float:
        """Wall-clock time, seconds since the epoch (for timestamps and cron)."""
        ...

    def monotonic(self) -> float:
        """A clock that never goes back (for durations and deadlines)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``; a non-positive value only yields to other tasks."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        """Seconds since the epoch."""
        return time.time()

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """``anyio.sleep``."""
        await anyio.sleep(max(0.0, seconds))


class FakeClock:
    """A clock that moves only when told to; ``now`` and ``monotonic`` move together."""

    def __init__(self, start: float = 1_700_000_000.0):
        self._now = start
        self._offset = start
        self._sleepers: list[tuple[float, int, anyio.Event]] = []
        self._seq = itertools.count()
        self._sleeper_added = anyio.Event()

    def now(self) -> float:
        """The fake wall time."""
        return self._now

    def monotonic(self) -> float:
        """The fake monotonic time (starts at 0)."""
        return self._now - self._offset

    async def sleep(self, seconds: float) -> None:
        """Wait until ``advance`` moves the clock ``seconds`` forward."""
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        event = anyio.Event()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), event))
        self._sleeper_added.set()
        self._sleeper_added = anyio.Event()
        try:
            await event.wait()
        finally:
            event.set()  # a cancelled sleeper no longer counts in ``sleepers``

    @property
    def sleepers(self) -> int:
        """How many tasks are asleep on this clock right now."""
        return sum(1 for _, _, event in self._sleepers if not event.is_set())

    def next_deadline(self) -> float | None:
        """The wall time of the earliest pending sleeper, if any."""
        pending = [deadline for deadline, _, event in self._sleepers if not event.is_set()]
        return min(pending) if pending else None

    async def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has passed, then let them run."""
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, event = heapq.heappop(self._sleepers)
            event.set()
        # Give woken tasks a chance to run before the test looks at their effects.
        for _ in range(5):
            await anyio.lowlevel.checkpoint()

    async def wait_for_sleepers(self, count: int = 1) -> None:
        """Return once at least ``count`` tasks sleep on this clock (a deterministic sync point)."""
        while self.sleepers < count:
            await self._sleeper_added.wait()


class DeadlineExceeded(TimeoutError):
    """The deadline of ``run_with_deadline`` passed (not a ``TimeoutError`` the function raised itself)."""


async def run_with_deadline(clock: Clock, seconds: float | None, fn: Callable[[], Awaitable[T]]) -> T:
    """Await ``fn()``; raise ``TimeoutError`` if ``clock`` says ``seconds`` passed first (``None``: no limit).

    The deadline runs on the injectable clock, so tests move it with ``FakeClock.advance``; on the real clock it
    is a plain deadline of the event loop (no watchdog task per call). The error raised is a ``TimeoutError``
    subclass (``DeadlineExceeded``), so a handler's own ``TimeoutError`` stays apart.
    """
    if seconds is None:
        return await fn()
    if isinstance(clock, SystemClock):  # the real clock: a deadline on the event loop, no watchdog task
        with anyio.move_on_after(seconds):
            return await fn()
        raise DeadlineExceeded(f"no answer within {seconds:g} s")
    outcome: list[T] = []
    failure: list[Exception] = []
    with anyio.CancelScope() as deadline:
        async with anyio.create_task_group() as tg:

            async def watchdog() -> None:
                await clock.sleep(seconds)
                deadline.cancel()

            tg.start_soon(watchdog)
            try:
                outcome.append(await fn())
            except Exception as exc:
                failure.append(exc)
            finally:
                tg.cancel_scope.cancel()
    if failure:
        raise failure[0]
    if not outcome:
        raise DeadlineExceeded(f"no answer within {seconds:g} s")
    return outcome[0]
