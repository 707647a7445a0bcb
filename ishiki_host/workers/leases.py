"""Each model call's slot leased from the supervisor's scheduler (``scheduler.across_workers: lease``).

With leasing, the workers of ``ishiki run --workers N`` have no slots of their own: a worker's gateways take each
call's slot from ``LeaseClient``, which asks the supervisor over the worker's link, and the supervisor grants it
when its own gateway's ``Scheduler`` does. So each provider's ``max_concurrency`` holds across all the workers
whichever of them is busy, and so does the call priority: an interactive call on one worker goes before a
background call on another, and background calls defer to interactive traffic on any worker.

Three notifications, none answered, make a lease:

- worker to supervisor ``slot.lease`` ``{"id": n, "provider": p, "limit": l, "priority": "interactive"}``;
- supervisor to worker ``slot.granted`` ``{"id": n}``, when its scheduler granted the slot;
- worker to supervisor ``slot.release`` ``{"id": n}``, when the call ended, or when the worker stopped waiting
  (the call was cancelled): a request still waiting is withdrawn, a slot granted meanwhile is given back.

Notifications rather than a request answered at the grant, because a peer runs at most ``max_in_flight`` handlers
at once and then stops reading: requests waiting for slots would fill them, and the releases that free the
slots would never be read. The supervisor holds each lease in a task of its ``LeaseLink``, not in a handler.

The supervisor's ``LeaseLink`` of a worker serves that worker's leases once it is given the link (``serve``);
what came before waits for it. When the link is gone, every lease of that worker ends: its requests are
withdrawn and its slots given back, so a worker that dies leaks none. ``limit`` is the worker's reading of
``max_concurrency``; the supervisor takes its own reading of the provider's when it has one.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import anyio

from ishiki_host.workers.peer import PeerClosed
from ishiki_host.workers.wire import FrameError

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from ishiki_host.config.models import ModelsConfig
    from ishiki_host.core.model import Priority
    from ishiki_host.gateway.scheduler import SlotSource
    from ishiki_host.jsontypes import Json
    from ishiki_host.workers.peer import Handler, Peer

__all__ = ["LeaseClient", "LeaseLink", "LeasingGateway"]

PRIORITIES: tuple[Priority, ...] = ("interactive", "background")


class LeasingGateway(Protocol):
    """What the leases need of the supervisor's gateway: its scheduler, and its reading of ``models.yaml``."""

    @property
    def scheduler(self) -> SlotSource:
        """Where the leases are granted."""
        ...

    @property
    def config(self) -> ModelsConfig:
        """The providers, for their ``max_concurrency``."""
        ...


@dataclass(frozen=True, slots=True)
class _Ask:
    """One ``slot.lease`` or ``slot.release`` as it came (``provider`` is ``None`` for a release)."""

    lease_id: int
    provider: str | None = None
    limit: int = 1
    priority: Priority = "interactive"


class LeaseLink:
    """The supervisor's side of one worker's leases, on the current gateway's scheduler (see the module
    docstring)."""

    def __init__(self, gateway: Callable[[], LeasingGateway]):
        self._gateway = gateway
        self._asks: deque[_Ask] = deque()  # in the order they came, until ``serve`` takes them
        self._arrived = anyio.Event()
        self._leases: dict[int, anyio.CancelScope] = {}
        self._released_early: set[int] = set()  # releases whose lease was not seen yet (handlers may overtake)
        self.held = 0
        self.waiting = 0

    def handlers(self) -> dict[str, Handler]:
        """``slot.lease`` and ``slot.release``, to serve on the worker's link."""
        return {"slot.lease": self._lease, "slot.release": self._release}

    async def _lease(self, params: dict[str, Json]) -> Json:
        provider, limit, priority = params.get("provider"), params.get("limit"), params.get("priority")
        if not isinstance(provider, str) or not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise FrameError(f"bad slot.lease: provider and limit (from 1) expected, got {params!r}")
        if priority not in PRIORITIES:
            raise FrameError(f"bad slot.lease: priority {priority!r}")
        kind: Priority = "interactive" if priority == "interactive" else "background"
        self._put(_Ask(_lease_id(params), provider, limit, kind))
        return None

    async def _release(self, params: dict[str, Json]) -> Json:
        self._put(_Ask(_lease_id(params)))
        return None

    def _put(self, ask: _Ask) -> None:
        self._asks.append(ask)
        self._arrived.set()

    async def serve(self, peer: Peer) -> None:
        """Serve the leases asked for over ``peer`` until it closes; then every one of them ends."""
        async with anyio.create_task_group() as tg:

            async def until_closed() -> None:
                await peer.wait_closed()
                tg.cancel_scope.cancel()

            tg.start_soon(until_closed)
            while True:
                while self._asks:
                    ask = self._asks.popleft()
                    if ask.provider is not None:
                        self._start(tg, peer, ask)
                    else:
                        self._end(ask.lease_id)
                self._arrived = anyio.Event()
                await self._arrived.wait()

    def _start(self, tg: TaskGroup, peer: Peer, ask: _Ask) -> None:
        if ask.lease_id in self._released_early:
            self._released_early.discard(ask.lease_id)  # withdrawn before it was seen: nothing to hold
            return
        scope = self._leases[ask.lease_id] = anyio.CancelScope()
        tg.start_soon(self._hold, peer, ask, scope)

    def _end(self, lease_id: int) -> None:
        scope = self._leases.get(lease_id)
        if scope is None:
            self._released_early.add(lease_id)
        else:
            scope.cancel()  # waiting: the request leaves the queue; granted: the slot is given back

    async def _hold(self, peer: Peer, ask: _Ask, scope: anyio.CancelScope) -> None:
        """One lease: wait for the slot, say it was granted, hold it until released (or the link is gone)."""
        assert ask.provider is not None
        gateway = self._gateway()
        provider = gateway.config.providers.get(ask.provider)
        limit = provider.max_concurrency if provider is not None else ask.limit
        self.waiting += 1
        granted = False
        try:
            with scope:
                async with gateway.scheduler.slot(ask.provider, limit, ask.priority):
                    self.waiting -= 1
                    self.held += 1
                    granted = True
                    with anyio.CancelScope(shield=True), contextlib.suppress(PeerClosed):  # a frame is never torn
                        await peer.notify("slot.granted", {"id": ask.lease_id})
                    await anyio.sleep_forever()
        finally:
            self._leases.pop(ask.lease_id, None)
            if granted:
                self.held -= 1
            else:
                self.waiting -= 1


@dataclass(eq=False, slots=True)
class _Wait:
    event: anyio.Event = field(default_factory=anyio.Event)
    granted: bool = False


class LeaseClient:
    """A worker's ``SlotSource``: each slot leased from the supervisor over its link (see the module docstring).

    ``handlers`` has ``slot.granted``, to serve on the same link; ``watch`` (run beside the link) wakes the calls
    still waiting when the link is gone, with ``PeerClosed``."""

    def __init__(self, peer: Peer):
        self._peer = peer
        self._ids = itertools.count(1)
        self._waiting: dict[int, _Wait] = {}

    def handlers(self) -> dict[str, Handler]:
        """``slot.granted``, to serve on the link to the supervisor."""
        return {"slot.granted": self.granted}

    async def granted(self, params: dict[str, Json]) -> Json:
        """The supervisor granted a lease (one whose call gave up meanwhile is released already)."""
        wait = self._waiting.pop(_lease_id(params), None)
        if wait is not None:
            wait.granted = True
            wait.event.set()
        return None

    async def watch(self) -> None:
        """Until the link is gone; then every call still waiting for its slot raises ``PeerClosed``."""
        await self._peer.wait_closed()
        for wait in list(self._waiting.values()):
            wait.event.set()

    @contextlib.asynccontextmanager
    async def slot(self, provider: str, limit: int, priority: Priority) -> AsyncIterator[None]:
        """Hold a slot of ``provider`` leased from the supervisor for the body of the ``async with``."""
        lease_id = next(self._ids)
        wait = self._waiting[lease_id] = _Wait()
        try:
            params: dict[str, Json] = {"id": lease_id, "provider": provider, "limit": limit, "priority": priority}
            with anyio.CancelScope(shield=True):  # sent whole, so a release never comes without its lease
                await self._peer.notify("slot.lease", params)
            if not self._peer.closed:
                await wait.event.wait()
            if not wait.granted:
                raise PeerClosed(f"the link to {self._peer.label} closed while a {provider} slot was leased")
        except BaseException:
            self._waiting.pop(lease_id, None)
            await self._give_back(lease_id)
            raise
        try:
            yield
        finally:
            await self._give_back(lease_id)

    async def _give_back(self, lease_id: int) -> None:
        with anyio.CancelScope(shield=True), contextlib.suppress(PeerClosed):
            await self._peer.notify("slot.release", {"id": lease_id})

    def status(self) -> dict[str, Json]:
        """No lanes: a worker that leases has none of its own. The supervisor's scheduler shows them, for every
        worker at once (and each worker's leases held and waiting), so a sum of the workers' gateways and the
        supervisor's counts each call once."""
        return {}


def _lease_id(params: dict[str, Json]) -> int:
    lease_id = params.get("id")
    if not isinstance(lease_id, int) or isinstance(lease_id, bool):
        raise FrameError(f"bad slot lease id: {lease_id!r}")
    return lease_id
