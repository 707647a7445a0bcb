"""The supervisor's ``RuntimePlacement``: each runtime key on the worker that owns it.

``WorkerPlacement.deliver`` asks the owner (``RuntimeOwners``) which worker runs the key, waits for that worker
to be up (a restarting worker holds the event until it is back, as a slow disk would), and sends the event
with its attachments; the worker's route takes it exactly as in one process and answers with the durable
entry's id. A worker that dies before answering leaves the event maybe durable, maybe not: the channel is told
``ChannelUnavailable`` (try again later, not counted against the event), and the worker's runtime recognises a
repeat of an event it took (``channels.repeats``), so nothing is lost and nothing is answered twice.

``WorkerBeats`` is the supervisor's ``BeatRunner``: a beat with a target runs on the worker that owns the
target's runtime key; one without a target on the worker its id hashes to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.channels.codec import attachment_json
from ishiki_host.errors import BeatRunFailed, ChannelUnavailable
from ishiki_host.workers.peer import PeerClosed

if TYPE_CHECKING:
    from ishiki_host.channels.base import InboundAttachment
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.host.routes import ProfileRoute, RouteTable
    from ishiki_host.store.repos.beat_types import Beat
    from ishiki_host.workers.owners import RuntimeOwners
    from ishiki_host.workers.pool import WorkerPool

__all__ = ["WorkerBeats", "WorkerDelivery", "WorkerPlacement", "Workers"]


class WorkerDelivery:
    """The receipt of an event a worker made durable (the ``Delivery`` protocol)."""

    def __init__(self, pool: WorkerPool, worker: int, key: RuntimeKey, entry_id: int | None):
        self._pool = pool
        self.worker = worker
        self.key = key
        self._entry_id = entry_id

    @property
    def routed(self) -> bool:
        """Always true."""
        return True

    @property
    def runtime_key(self) -> str | None:
        """The key of the runtime that took the event."""
        return str(self.key)

    @property
    def entry_id(self) -> int | None:
        """The fact-log id of the entry (``None``: a filter consumed it, or it repeated one taken before)."""
        return self._entry_id

    async def settled(self) -> None:
        """Until the runtime has no running or queued turn; at once when its worker is gone."""
        peer = self._pool.peer(self.worker)
        if peer is None:
            return
        try:
            await peer.call("settled", {"key": str(self.key)})
        except PeerClosed:
            return

    def __repr__(self) -> str:
        return f"<WorkerDelivery {self.key} on worker {self.worker} entry={self._entry_id}>"


class Workers(Protocol):
    """The current pool and its owners (a change of ``workers`` on reload replaces both)."""

    @property
    def pool(self) -> WorkerPool:
        """The worker processes."""
        ...

    @property
    def owners(self) -> RuntimeOwners:
        """Which of them owns a key."""
        ...


class WorkerPlacement:
    """Runtimes on worker processes (see the module docstring)."""

    def __init__(self, workers: Workers):
        self._workers = workers

    def worker_of(self, key: RuntimeKey) -> int:
        """The worker that runs ``key``."""
        return self._workers.owners.owner(str(key))

    async def deliver(
        self, route: ProfileRoute, key: RuntimeKey, event: IshikiEvent, attachments: Sequence[InboundAttachment]
    ) -> WorkerDelivery:
        """Send ``event`` to the worker of ``key``; returns once it is durable there."""
        pool = self._workers.pool
        worker = self.worker_of(key)
        peer = await pool.wait_peer(worker)
        params = {
            "profile": route.profile.id,
            "key": str(key),
            "event": event.to_dict(),
            "attachments": [attachment_json(a) for a in attachments],
        }
        try:
            result = await peer.call("deliver", params)
        except PeerClosed as exc:
            raise ChannelUnavailable(
                f"event {event.message_id} was not taken for now: worker {worker} went away ({exc})"
            ) from exc
        entry_id = result.get("entry_id") if isinstance(result, dict) else None
        return WorkerDelivery(pool, worker, key, entry_id if isinstance(entry_id, int) else None)


class WorkerBeats:
    """The supervisor's ``BeatRunner`` (see the module docstring)."""

    def __init__(self, workers: Workers, routes: Callable[[], RouteTable]):
        self._workers = workers
        self._routes = routes

    async def run(self, beat: Beat, prompt: str) -> str:
        """Run ``beat`` on the worker that owns its target (or its id); the text it produced."""
        target = beat.target
        home = f"beat:{beat.id}"
        if target is not None:
            route = self._routes().get(target.profile)
            mode = route.profile.mode if route is not None else "channel"
            home = str(RuntimeKey.for_mode(mode, target.profile, target.sid, target.channel))
        worker = self._workers.owners.owner(home)
        peer = await self._workers.pool.wait_peer(worker)
        try:
            output = await peer.call("beat.run", {"beat": beat.id, "prompt": prompt})
        except PeerClosed as exc:
            raise BeatRunFailed(f"worker {worker} went away while beat {beat.id} ran ({exc})") from exc
        if not isinstance(output, str):
            raise BeatRunFailed(f"worker {worker} answered beat {beat.id} with {type(output).__name__}, not text")
        return output
