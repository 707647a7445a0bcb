"""Fixtures for codemode tests: every test must leave no worker thread behind."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest


def _codemode_threads() -> list[str]:
    # Only codemode's own workers: anyio's idle worker threads from earlier tests may exit at any moment.
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("ishiki-codemode-"))


@pytest.fixture(autouse=True)
def no_thread_leak() -> Iterator[None]:
    """The codemode worker threads alive after a test are those alive before it."""
    before = _codemode_threads()
    yield
    assert _codemode_threads() == before
