"""``RecordingHost``: a ``ChannelHost`` for channel tests, standing in for the Ishiki host.

It records every event dispatched to it and captures attachments into a real resource center (lazily,
through the fetchers the channel registered). It can be made to fail:

- ``fail_next(*errors)``: the next dispatches raise, before anything is recorded (the event is not durable);
- ``on_dispatch`` runs when a dispatch begins, ``on_recorded`` once the event is recorded; each is followed
  by a checkpoint, so cancelling a scope there "kills" the channel before the event is durable, or between
  "durable" and "dispatch returned".

With ``dedupe`` it ignores an event it already holds, keyed as the real host keys repeats (``event_key``:
kind, sid, channel, message id and ``extra.editedAt``; see ``ishiki_host.runtime.repeats``). ``rng`` is the
random source the channel draws its jitter from (default ``random.Random(0)``).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from ishiki_host.core.clock import SystemClock
from ishiki_host.runtime.events import Attachment
from ishiki_host.runtime.resources import AssetFetchers, Blob, create_runtime_resources

if TYPE_CHECKING:
    from ishiki_host.channels.base import InboundAttachment
    from ishiki_host.core.clock import Clock
    from ishiki_host.runtime.events import IshikiEvent

__all__ = ["RecordingDelivery", "RecordingHost", "event_key"]


def event_key(event: IshikiEvent) -> tuple[Any, ...]:
    """What identifies an event across redeliveries: a repeat has the same key."""
    return (event.kind, event.sid, event.channel_id, event.message_id, event.extra.get("editedAt"))


@dataclasses.dataclass(frozen=True, slots=True)
class RecordingDelivery:
    """The receipt ``RecordingHost.dispatch`` returns."""

    routed: bool = True
    runtime_key: str | None = "test/runtime"
    entry_id: int | None = None

    async def settled(self) -> None:
        """Nothing runs turns here: always settled."""


class RecordingHost:
    """See the module docstring. ``state_dir`` is the connection's own directory; assets go beside it."""

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
        self.clock: Clock = clock or SystemClock()
        self.rng = rng or random.Random(0)
        self.state_dir = Path(state_dir)
        self.fetchers = AssetFetchers()
        self.logger = logger or logging.getLogger("ishiki.channel.test")
        self.resources = create_runtime_resources(
            self.state_dir.parent / "runtime", clock=self.clock, fetchers=self.fetchers
        )
        self.dedupe = dedupe
        self.capture = capture
        self.events: list[IshikiEvent] = []
        self.duplicates: list[IshikiEvent] = []
        self.dispatch_calls = 0
        self.on_dispatch: Callable[[IshikiEvent], None] | None = None
        self.on_recorded: Callable[[IshikiEvent], None] | None = None
        self._failures: collections.deque[BaseException] = collections.deque()
        self._keys: dict[tuple[Any, ...], int] = {}
        self._changed: anyio.Event | None = None

    def fail_next(self, *errors: BaseException) -> None:
        """The next dispatches raise these, in order, before recording anything."""
        self._failures.extend(errors)

    async def dispatch(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> RecordingDelivery:
        """Record ``event`` with its attachments captured as ``asset://`` URLs (see the module docstring)."""
        self.dispatch_calls += 1
        try:
            if self.on_dispatch is not None:
                self.on_dispatch(event)
                await anyio.lowlevel.checkpoint()
            if self._failures:
                raise self._failures.popleft()
            key = event_key(event)
            if self.dedupe and key in self._keys:
                self.duplicates.append(event)
                return RecordingDelivery(entry_id=self._keys[key])
            if self.capture and attachments:
                captured = [await self._capture(item) for item in attachments]
                event = dataclasses.replace(event, attachments=(*event.attachments, *captured))
            self.events.append(event)
            self._keys[key] = len(self.events)
            if self.on_recorded is not None:
                self.on_recorded(event)
                await anyio.lowlevel.checkpoint()
            return RecordingDelivery(entry_id=len(self.events))
        finally:
            self._notify()

    async def read_asset(self, url: str) -> Blob:
        """The bytes of a captured attachment (downloaded through the channel's fetcher on first read)."""
        return await self.resources.center.read_bytes(url)

    async def until(self, predicate: Callable[[], bool], *, deadline: float = 10.0) -> None:
        """Return once ``predicate()`` holds; checked after every dispatch (``deadline``: a safety net)."""
        with anyio.fail_after(deadline):
            while not predicate():
                if self._changed is None:
                    self._changed = anyio.Event()
                await self._changed.wait()

    async def wait_for_events(self, count: int) -> list[IshikiEvent]:
        """Return the events once at least ``count`` were recorded."""
        await self.until(lambda: len(self.events) >= count)
        return self.events

    async def _capture(self, item: InboundAttachment) -> Attachment:
        assets = self.resources.assets
        if item.data is not None:
            url = await assets.capture(item.data, media_type=item.media_type, name=item.name)
        else:
            assert item.fetcher is not None, "an attachment needs data or a fetcher"
            url = await assets.capture_lazy(
                item.fetcher, item.locator, media_type=item.media_type, name=item.name, size=item.size
            )
        return Attachment(url=url, media_type=item.media_type, name=item.name, size=item.size)

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None
