"""Fixtures: an injectable clock, and (in sibling modules) fake model servers and channels."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.eventloop import backend_options


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    """Tests run on the loop ``ishiki run`` takes by default: uvloop when installed, else asyncio's."""
    return ("asyncio", backend_options("auto"))


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock that moves only when the test calls ``advance``."""
    return FakeClock()


@pytest.fixture
def wake_sleeper(fake_clock: FakeClock) -> Callable[[], Awaitable[float]]:
    """``await wake_sleeper()``: wait until something sleeps on ``fake_clock``, then move the clock to its deadline;
    returns the length of that sleep (a back-off, a poll's pause). A sleep that never comes fails as timed out
    (a cap as a last resort)."""

    async def wake() -> float:
        with anyio.fail_after(30):
            await fake_clock.wait_for_sleepers(1)
        deadline = fake_clock.next_deadline()
        assert deadline is not None, "a sleeper was there a moment ago"
        delay = deadline - fake_clock.now()
        await fake_clock.advance(delay)
        return delay

    return wake
