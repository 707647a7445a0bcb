"""Fixtures for codemode tests: every test must leave no worker thread behind."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def no_thread_leak() -> Iterator[None]:
    """The number of live threads after a test equals the number before it."""
    before = threading.active_count()
    yield
    assert threading.active_count() == before, [thread.name for thread in threading.enumerate()]
