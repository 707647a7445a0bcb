"""``RecordingHost``: the host as the Telegram channel sees it, for channel tests.

It is ``ishiki_host.testing.FakeChannelHost`` (events recorded, attachments captured into a real resource
center, ``fail_next``, ``on_dispatch``/``on_recorded``, ``dedupe``) made from the connection's ``state_dir``
(assets go beside it, in ``runtime/``) and running on the system clock unless given one, as the Telegram
tests expect. For webhook mode, ``http`` is a running ``ishiki_host.testing.serve_http()``: the connection
mounts ``/hooks/telegram/0`` on it, as the first account does in a real host.
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
    from ishiki_host.testing import HttpIngress

__all__ = ["HOOK_PREFIX", "PUBLIC_URL", "RecordingDelivery", "RecordingHost", "event_key"]

HOOK_PREFIX = "/hooks/telegram/0"
"""Where a real host mounts the webhook of the first Telegram account (``ChannelHost.http_mount``)."""

PUBLIC_URL = "https://bot.example.com"
"""The ``http.public_url`` of the test kit's HTTP server (``telegram_ingress``); the fake delivers to it."""

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
        http: HttpIngress | None = None,
    ):
        state_dir = Path(state_dir)
        super().__init__(
            state_dir.parent,
            clock=clock or SystemClock(),
            rng=rng,
            logger=logger,
            dedupe=dedupe,
            capture=capture,
            http=http,
            http_prefix=HOOK_PREFIX,
        )
        self.state_dir = state_dir

    @property
    def dispatch_calls(self) -> int:
        """How many times ``dispatch`` was called (failed and repeated calls included)."""
        return self.dispatches
