"""Fixtures for tests of channel plugins.

``channel_host``
    A ``FakeChannelHost`` on the ``fake_clock`` whose state and captured attachments live under ``tmp_path``:
    pass it to ``MyChannel().create(channel_host, account)`` and read what the connection dispatched.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.testing.channel_host import FakeChannelHost


@pytest.fixture
def channel_host(tmp_path: Path, fake_clock: FakeClock) -> FakeChannelHost:
    """A recording channel host whose clock is ``fake_clock``."""
    return FakeChannelHost(tmp_path / "channel-host", clock=fake_clock)
