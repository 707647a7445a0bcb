"""``RecordingHost``: the host as the Telegram channel sees it, for channel tests.

It is ``ishiki_host.testing.FakeChannelHost`` (events recorded, attachments captured into a real resource
center, ``fail_next``, ``on_dispatch``/``on_recorded``, ``dedupe``) made from the connection's ``state_dir``
(assets go beside it, in ``runtime/``) and running on the system clock unless given one, as the Telegram
tests expect. For webhook mode, ``http`` is a running ``ishiki_host.testing.serve_http()``: the connection
mounts ``/hooks/telegram/0`` on it, as the first account does in a real host.

``hold(picks)`` holds the dispatches of the events ``picks`` chooses before anything is recorded, until the
returned event is set: a message that joins a running turn, whose dispatch returns only when the turn's step
ends. ``held`` lists the events waiting there and ``await wait_held(n)`` waits until ``n`` do. A dispatch
cancelled while held never reached the host: it is not counted in ``dispatch_calls``.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from ishiki_host import SystemClock
from ishiki_host.testing import FakeChannelHost, FakeDelivery, event_identity

if TYPE_CHECKING:
    from ishiki_host import Clock, InboundAttachment, IshikiEvent
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
        self.held: list[IshikiEvent] = []
        self._holds: list[tuple[Callable[[IshikiEvent], bool], anyio.Event]] = []
        self._held_changed = anyio.Event()

    @property
    def dispatch_calls(self) -> int:
        """How many times ``dispatch`` was called (failed and repeated calls included, held ones once released)."""
        return self.dispatches

    def hold(self, picks: Callable[[IshikiEvent], bool]) -> anyio.Event:
        """Hold each dispatch of an event ``picks`` chooses until the returned event is set (see the module
        docstring)."""
        release = anyio.Event()
        self._holds.append((picks, release))
        return release

    async def wait_held(self, count: int = 1, *, deadline: float = 10.0) -> list[IshikiEvent]:
        """The events held, once at least ``count`` are (``deadline``: a safety net)."""
        with anyio.fail_after(deadline):
            while len(self.held) < count:
                await self._held_changed.wait()
        return list(self.held)

    async def dispatch(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> RecordingDelivery:
        """Wait while a ``hold`` holds ``event``, then record it as ``FakeChannelHost.dispatch`` does."""
        for picks, release in self._holds:
            if not release.is_set() and picks(event):
                self.held.append(event)
                self._held_change()
                try:
                    await release.wait()
                finally:
                    self.held.remove(event)
                    self._held_change()
        return await super().dispatch(event, attachments)

    def _held_change(self) -> None:
        self._held_changed.set()
        self._held_changed = anyio.Event()
