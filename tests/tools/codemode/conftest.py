"""Fixtures for codemode tests: every test must leave no worker thread behind."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def no_thread_leak() -> Iterator[None]:
    """No thread started during a test is still alive after it.

    Compared as sets: a thread left by an earlier test (an idle anyio worker) may exit meanwhile.
    """
    before = set(threading.enumerate())
    yield
    leaked = [thread.name for thread in threading.enumerate() if thread not in before]
    assert leaked == [], leaked
