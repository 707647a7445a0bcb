"""Fixtures: an injectable clock, and (in sibling modules) fake model servers and channels."""

from __future__ import annotations

import pytest

from ishiki_host.core.clock import FakeClock


@pytest.fixture
def anyio_backend() -> str:
    """Tests run on asyncio, the backend the host runs on."""
    return "asyncio"


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock that moves only when the test calls ``advance``."""
    return FakeClock()
