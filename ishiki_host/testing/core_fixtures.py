"""Fixtures for tests of agents, engines and hooks: an open fact log on the fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.factlog import FactLog


@pytest.fixture
async def fact_log(tmp_path: Path, fake_clock: FakeClock, anyio_backend: str) -> AsyncIterator[FactLog]:
    """A fact log at ``tmp_path / "facts.jsonl"`` stamped by ``fake_clock``; closed after the test."""
    log = await FactLog.open(tmp_path / "facts.jsonl", clock=fake_clock)
    try:
        yield log
    finally:
        await log.close()
