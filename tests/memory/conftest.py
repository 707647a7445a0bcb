"""Fixtures of the memory database tests: a store on a temporary file, driven by a fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.store import MemoryStore


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's memory database lives (its directory does not exist yet)."""
    return tmp_path / "data" / "memory.db"


@pytest.fixture
async def store(db_path: Path, fake_clock: FakeClock) -> AsyncIterator[MemoryStore]:
    """An open store; closed (and checked for integrity) after the test."""
    async with await MemoryStore.open(db_path, clock=fake_clock) as opened:
        yield opened
        assert await opened.integrity_problems() == []
