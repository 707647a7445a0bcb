"""``FakeChannelHost``: the host as a channel connection sees it, for tests of channel plugins.

It implements ``ishiki_host.channels.base.ChannelHost``: a channel made with ``create(host, account)`` dispatches
its shaped events here, and the test reads them back. Attachments are captured into a real resource center
(eagerly from ``data``, or lazily through a fetcher the channel registered in ``host.fetchers``), so
``await host.read_asset(url)`` exercises the channel's own download path::

    connection = MyChannel().create(channel_host, plugin_config(MyChannel, {...}))
    async with anyio.create_task_group() as tg:
        await tg.start(connection.run)
        ...                                    # make the fake platform deliver a message
        (event,) = await channel_host.wait_for_events(1)
        tg.cancel_scope.cancel()

It can be made to fail or to stop at chosen moments:

- ``fail_next(*errors)``: the next dispatches raise before anything is recorded (the event is not durable, as
  when a runtime's disk is full), so a test can show the channel does not confirm such input to its platform;
- ``on_dispatch`` runs when a dispatch begins, ``on_recorded`` once the event is recorded; each is followed by
  a checkpoint, so cancelling a scope there "kills" the channel before the event is durable, or between
  "durable" and "dispatch returned".

With ``routed=False`` every event is answered as owned by no profile, which the real host also reports. With
``dedupe=True`` an event already held is not recorded again but kept in ``duplicates``, keyed as the real host
keys repeats (``ishiki_host.channels.repeats.event_identity``). ``capture=False`` records attachments as given.

Webhooks: ``http_mount()`` mounts ``http_prefix`` on ``http``, a real server on the loopback interface
(``ishiki_host.testing.serve_http``), so a test posts to ``mount.local_url`` as the platform would.

``command_names(channel_id)`` answers ``commands`` (the host's built-in names unless a test sets others).

``shared`` is the host's shared objects as the channel sees them: a ``SharedObjects()`` of its own, or the one
given (pass a ``FakeHostPluginContext``'s ``services`` to test a channel and a host plugin that meet there).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ishiki_host.channels.events import Attachment
from ishiki_host.channels.repeats import event_identity
from ishiki_host.commands import builtin_commands
from ishiki_host.config.host import HttpSettings
from ishiki_host.core.clock import Clock, FakeClock
from ishiki_host.core.shared import SharedObjects
from ishiki_host.ingress import HttpIngress
from ishiki_host.resources import AssetFetchers, Blob, RuntimeResources, create_runtime_resources

if TYPE_CHECKING:
    from ishiki_host.channels.base import InboundAttachment
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.ingress.types import HttpMount

__all__ = ["FakeChannelHost", "FakeDelivery"]


@dataclasses.dataclass(frozen=True, slots=True)
class FakeDelivery:
    """The receipt ``FakeChannelHost.dispatch`` returns (a ``Delivery``)."""

    routed: bool = True
    runtime_key: str | None = "test/runtime"
    entry_id: int | None = None

    async def settled(self) -> None:
        """Nothing runs turns here: always settled."""


class FakeChannelHost:
    """A ``ChannelHost`` that records what a channel dispatches (see the module docstring).

    ``root`` holds the connection's ``state_dir`` (``root/state``) and the resource home attachments are
    captured into (``root/runtime``). The clock defaults to a ``FakeClock``: back-off waits only move when the
    test advances it; ``rng`` (the connection's random source) defaults to ``random.Random(0)``.
    """

    def __init__(
        self,
        root: Path,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        logger: logging.Logger | None = None,
        routed: bool = True,
        dedupe: bool = False,
        capture: bool = True,
        http: HttpIngress | None = None,
        http_prefix: str = "/hooks/test/0",
        shared: SharedObjects | None = None,
    ):
        self.http = http if http is not None else HttpIngress(HttpSettings())
        self.shared = shared if shared is not None else SharedObjects()
        self.commands: list[str] = sorted(name for command in builtin_commands() for name in command.names)
        self.http_prefix = http_prefix
        self.clock: Clock = clock or FakeClock()
        self.rng = rng or random.Random(0)
        self.state_dir = Path(root) / "state"
        self.fetchers = AssetFetchers()
        self.logger = logger or logging.getLogger("ishiki.channel.test")
        self.resources: RuntimeResources = create_runtime_resources(
            Path(root) / "runtime", clock=self.clock, fetchers=self.fetchers
        )
        self.routed = routed
        self.dedupe = dedupe
        self.capture = capture
        self.events: list[IshikiEvent] = []
        self.duplicates: list[IshikiEvent] = []
        self.dispatches = 0
        self.on_dispatch: Callable[[IshikiEvent], None] | None = None
        self.on_recorded: Callable[[IshikiEvent], None] | None = None
        self._failures: collections.deque[BaseException] = collections.deque()
        self._entries: dict[str, int] = {}  # event identity -> its entry id, for ``dedupe``
        self._changed: anyio.Event | None = None

    def http_mount(self) -> HttpMount:
        """``http_prefix`` on ``http`` (a running ``serve_http()``); without one, entering the mount raises
        ``IngressError`` as a host without ``http.listen`` does."""
        return self.http.mount(self.http_prefix)

    def command_names(self, channel_id: str) -> list[str]:
        """``commands``, sorted (the same for every channel)."""
        return sorted(self.commands)

    def fail_next(self, *errors: BaseException) -> None:
        """The next dispatches raise these, in order, before anything is recorded."""
        self._failures.extend(errors)

    async def dispatch(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> FakeDelivery:
        """Record ``event``, its ``attachments`` captured as ``asset://`` URLs; returns its receipt."""
        self.dispatches += 1
        try:
            if self.on_dispatch is not None:
                self.on_dispatch(event)
                await anyio.lowlevel.checkpoint()
            if self._failures:
                raise self._failures.popleft()
            key = event_identity(event)
            if self.dedupe and key in self._entries:
                self.duplicates.append(event)
                return FakeDelivery(entry_id=self._entries[key])
            if self.capture and attachments:
                captured = [await self._capture(item) for item in attachments]
                event = dataclasses.replace(event, attachments=(*event.attachments, *captured))
            if not self.routed:
                return FakeDelivery(routed=False, runtime_key=None)
            self.events.append(event)
            self._entries[key] = len(self.events)
            if self.on_recorded is not None:
                self.on_recorded(event)
                await anyio.lowlevel.checkpoint()
            return FakeDelivery(entry_id=len(self.events))
        finally:
            self._notify()

    async def read_asset(self, url: str) -> Blob:
        """The bytes of a captured attachment (fetched through the channel's fetcher on first read)."""
        return await self.resources.center.read_bytes(url)

    async def until(self, predicate: Callable[[], bool], *, deadline: float = 10.0) -> None:
        """Return once ``predicate()`` holds; it is checked after every dispatch. ``deadline`` is a safety net."""
        with anyio.fail_after(deadline):
            while not predicate():
                if self._changed is None:
                    self._changed = anyio.Event()
                await self._changed.wait()

    async def wait_for_events(self, count: int, *, deadline: float = 10.0) -> list[IshikiEvent]:
        """The recorded events, once there are at least ``count``."""
        await self.until(lambda: len(self.events) >= count, deadline=deadline)
        return list(self.events)

    async def _capture(self, item: InboundAttachment) -> Attachment:
        assets = self.resources.assets
        if item.data is not None:
            url = await assets.capture(item.data, media_type=item.media_type, name=item.name)
        elif item.fetcher is not None:
            url = await assets.capture_lazy(
                item.fetcher, item.locator, media_type=item.media_type, name=item.name, size=item.size
            )
        else:
            raise ValueError("an InboundAttachment needs data or a fetcher")
        return Attachment(url=url, media_type=item.media_type, name=item.name, size=item.size)

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None
