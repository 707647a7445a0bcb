"""Fixtures: an injectable clock, and (in sibling modules) fake model servers and channels."""

from __future__ import annotations

from typing import Any

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
