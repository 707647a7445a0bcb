"""Helpers shared by this package's tests (test modules cannot import each other)."""

from __future__ import annotations

import anyio
import pytest


@pytest.fixture
def wake_sleeper(fake_clock):
    """``await wake_sleeper()``: wait until the connection sleeps on the fake clock, then move the clock to
    its deadline; returns the length of that sleep. A sleep that never comes fails after a few seconds."""

    async def wake() -> float:
        with anyio.fail_after(5):
            await fake_clock.wait_for_sleepers(1)
        delay = fake_clock.next_deadline() - fake_clock.now()
        await fake_clock.advance(delay)
        return delay

    return wake


@pytest.fixture
def sleeping(fake_clock):
    """``await sleeping()``: wait (a few seconds at most) until something sleeps on the fake clock."""

    async def wait() -> None:
        with anyio.fail_after(5):
            await fake_clock.wait_for_sleepers(1)

    return wait
