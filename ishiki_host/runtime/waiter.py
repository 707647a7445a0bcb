"""The runtime's waiter: the one-shot wake condition the ``wait`` tool declares.

``wait(messages=N)`` starts a turn once N new inbound messages were appended; ``wait(seconds=S)`` once S
seconds passed on the host's clock (``FakeClock`` moves it in tests); with both, whichever comes first. The
condition fires once and is consumed; any turn that starts before it fires clears it (the persona is awake
again, so the old plan no longer holds). Arming again replaces the previous condition.

The turn it starts runs at most at the level of the turn that armed it (the ceiling goes into its trigger,
see ``runtime.scheduled``): an untrusted sender's "wait five seconds" does not buy a trusted turn.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from ishiki_host.runtime.scheduled import TRUST_CEILING

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from ishiki_host.core.clock import Clock
    from ishiki_host.core.tools import TrustLevel

__all__ = ["Waiter", "WakeFn"]

logger = logging.getLogger(__name__)

WakeFn = Callable[[str | None, dict[str, object]], Awaitable[object]]
"""Starts the turn: ``(prompt or None, trigger info)``."""


class Waiter:
    """One runtime's wait condition; ``bind`` gives it the task group its timer runs in."""

    def __init__(self, clock: Clock, wake: WakeFn):
        self._clock = clock
        self._wake = wake
        self._tg: TaskGroup | None = None
        self._messages: int | None = None
        self._seconds: float | None = None
        self._seen = 0
        self._level: TrustLevel = "untrusted"
        self._timer: anyio.CancelScope | None = None

    @property
    def armed(self) -> bool:
        """Whether a condition waits to fire."""
        return self._messages is not None or self._seconds is not None

    def describe(self) -> str | None:
        """The armed condition in words, or ``None``."""
        parts = []
        if self._messages is not None:
            parts.append(f"{self._messages - self._seen} more message(s)")
        if self._seconds is not None:
            parts.append(f"{self._seconds:g} s")
        return " or ".join(parts) if parts else None

    def bind(self, tg: TaskGroup) -> None:
        """Run timers in ``tg`` (the runtime's task group)."""
        self._tg = tg

    def arm(self, messages: int | None, seconds: float | None, level: TrustLevel) -> str:
        """Replace the condition with ``messages`` new messages and/or ``seconds``, for a turn at ``level``;
        returns what the model reads."""
        if messages is None and seconds is None:
            raise ValueError("wait needs messages or seconds")
        self.clear()
        self._messages, self._seconds, self._seen, self._level = messages, seconds, 0, level
        if seconds is not None:
            if self._tg is None:
                raise RuntimeError("the waiter is not bound to a task group")
            scope = self._timer = anyio.CancelScope()
            self._tg.start_soon(self._run_timer, scope, seconds)
        return f"Waiting for {self.describe()}; this turn ends now."

    def clear(self) -> None:
        """Drop the condition (a new turn started, or the runtime stops)."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._messages = self._seconds = None
        self._seen = 0

    async def note_message(self) -> None:
        """Count one new inbound message; fires when the count is reached."""
        if self._messages is None:
            return
        self._seen += 1
        if self._seen >= self._messages:
            count = self._messages
            self.clear()
            await self._fire(None, {"messages": count})

    async def _run_timer(self, scope: anyio.CancelScope, seconds: float) -> None:
        with scope:
            await self._clock.sleep(seconds)
            if self._timer is scope:
                self._timer = None
                self.clear()
                prompt = f"The {seconds:g} seconds you chose to wait have passed."
                await self._fire(prompt, {"seconds": seconds})

    async def _fire(self, prompt: str | None, info: dict[str, object]) -> None:
        try:
            await self._wake(prompt, {**info, TRUST_CEILING: self._level})
        except Exception:
            logger.exception("the waiter could not start a turn")
