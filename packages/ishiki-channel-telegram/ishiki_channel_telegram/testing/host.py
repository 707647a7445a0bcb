"""``RecordingHost``: the host as the Telegram channel sees it, for channel tests.

It is ``ishiki_host.testing.FakeChannelHost`` (events recorded, attachments captured into a real resource
center, ``fail_next``, ``on_dispatch``/``on_recorded``, ``dedupe``) made from the connection's ``state_dir``
(assets go beside it, in ``runtime/``) and running on the system clock unless given one, as the Telegram
tests expect.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import TYPE_CHECKING

from ishiki_host import SystemClock
from ishiki_host.testing import FakeChannelHost, FakeDelivery, event_identity

if TYPE_CHECKING:
    from ishiki_host import Clock

__all__ = ["RecordingDelivery", "RecordingHost", "event_key"]

RecordingDelivery = FakeDelivery
"""The receipt ``RecordingHost.dispatch`` returns."""

event_key = event_identity
"""What identifies an event across redeliveries: a repeat has the same key (as the real host keys repeats)."""


class RecordingHost(FakeChannelHost):
    """A ``FakeChannelHost`` rooted at the connection's ``state_dir`` (see the module docstring)."""

    def __init__(
        self,
        state_dir: Path,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        logger: logging.Logger | None = None,
        dedupe: bool = False,
        capture: bool = True,
    ):
        state_dir = Path(state_dir)
        super().__init__(
            state_dir.parent, clock=clock or SystemClock(), rng=rng, logger=logger, dedupe=dedupe, capture=capture
        )
        self.state_dir = state_dir

    @property
    def dispatch_calls(self) -> int:
        """How many times ``dispatch`` was called (failed and repeated calls included)."""
        return self.dispatches
