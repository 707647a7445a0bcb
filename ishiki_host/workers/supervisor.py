"""The supervisor's half of ``ishiki run --workers N``: the worker pool, and what ties it to the host.

``WorkerSupervision`` gives the supervisor's ``HostRole`` (events to the worker that owns their key, beats to the
worker of their target, a reload passed on to every worker, the workers in the host's status) and, once the
host has started, runs the pool (``running``): it serves each worker the channel operations of its runtimes
(``ishiki_host.workers.serving``) and the slot leases of its model calls (``ishiki_host.workers.leases``, from
the supervisor's own scheduler, when ``scheduler.across_workers`` is ``lease``), and keeps every worker told
which connections are up, the whole list at each (re)start and after each change. The list is sent again when
it changed while it was being sent, so a worker that becomes ready never misses a change (it counts as ready
only once its ``on_ready`` returned).

A reload that changes ``workers`` of ``ishiki.yaml`` is applied by a clean restart of the workers (drained, then
the new count started; each key moves to its new owner, its fact log with it), said in the log; one to 1 waits
for the next start (a supervisor cannot become one process), and with ``--workers`` given the flag wins.

A stop drains in order: the workers first, within the host's grace (their turns still send through the
supervisor's channels, which are up until then), then the supervisor's host closes its channels.
"""

from __future__ import annotations

import contextlib
import logging
import random
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ishiki_host.config.host import resolved_workers
from ishiki_host.host.roles import HostRole
from ishiki_host.observe.fleet import WorkerCounts
from ishiki_host.workers.leases import LeaseLink
from ishiki_host.workers.outlets import ChannelInfo
from ishiki_host.workers.owners import HashOwners
from ishiki_host.workers.placement import WorkerBeats, WorkerPlacement
from ishiki_host.workers.pool import WorkerPool
from ishiki_host.workers.serving import channel_handlers
from ishiki_host.workers.views import WorkerViews

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus

    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.config.host import WorkerSlots
    from ishiki_host.core.clock import Clock
    from ishiki_host.host.host import Host
    from ishiki_host.jsontypes import Json
    from ishiki_host.workers.owners import RuntimeOwners
    from ishiki_host.workers.peer import Handler, Peer

__all__ = ["WorkerSupervision", "socket_folder", "worker_command"]

logger = logging.getLogger("ishiki_host.workers")

VIEW_SECONDS = 2.0
"""How often the supervisor asks its workers what they run, for ``ishiki status``."""


def worker_command(root: Path, index: int, count: int, socket_path: Path, options: Sequence[str] = ()) -> list[str]:
    """The argv of worker ``index`` of ``count`` for the config dir ``root``, linking at ``socket_path``."""
    return [
        sys.executable, "-m", "ishiki_host.cli.worker", "--index", str(index), "--count", str(count),
        "--socket", str(socket_path), *options, str(root),
    ]  # fmt: skip


class WorkerSupervision:
    """See the module docstring. ``options`` are passed on to every worker (the log settings); ``fixed``: the
    count came from ``--workers``, so a reload does not change it."""

    def __init__(
        self,
        root: Path,
        count: int,
        options: Sequence[str] = (),
        *,
        clock: Clock,
        seed: int | None = None,
        start_timeout: float = 60.0,
        fixed: bool = False,
        one_process: Callable[[Host, int], None] | None = None,
    ):
        self.root = root
        self.count = count
        self.fixed = fixed
        self._one_process = one_process  # a reload asked for one worker: the caller restarts the host as one process
        self._options = list(options)
        self._clock = clock
        self._rng = random.Random(seed)
        self._start_timeout = start_timeout
        self._host: Host | None = None
        self._socket_path: Path | None = None
        self._pool: WorkerPool | None = None
        self._owners = HashOwners(count)
        self._pool_scope: anyio.CancelScope | None = None
        self._tg: TaskGroup | None = None
        self._version = 0
        self._reloads = 0
        self._views: dict[int, dict[str, Json]] = {}
        self._counts = WorkerCounts()  # every worker life's metrics, summed into the supervisor's /metrics
        self._refreshing = anyio.Lock()  # one status round at a time (the 2 s watch, a scrape)
        self._slots: WorkerSlots = "split"  # read from the host's config when the pool starts
        self._leases: dict[int, LeaseLink] = {}  # each worker's current link's slot leases

    @property
    def pool(self) -> WorkerPool:
        """The current worker pool (made by ``role``)."""
        assert self._pool is not None, "make the role first"
        return self._pool

    @property
    def owners(self) -> RuntimeOwners:
        """Which current worker owns a key."""
        return self._owners

    def role(self, socket_path: Path) -> HostRole:
        """The supervisor's role for its ``Host``; the workers will connect at ``socket_path``."""
        self._socket_path = socket_path
        self._pool = self._make_pool(self.count)
        return HostRole(
            "supervisor",
            placement=WorkerPlacement(self),
            beats=WorkerBeats(self, lambda: self._started().routes),
            after_reload=self._reload_workers,
            workers=self._workers_status,
            runtimes=self._runtimes,
            views=WorkerViews(self._owner_peer, self._spawn),
        )

    def _make_pool(self, count: int) -> WorkerPool:
        assert self._socket_path is not None
        options = self._options
        return WorkerPool(
            count,
            lambda index, path: worker_command(self.root, index, count, path, [*options, "--slots", self._slots]),
            self._handlers,
            socket_path=self._socket_path,
            clock=self._clock,
            rng=self._rng,
            start_timeout=self._start_timeout,
            on_ready=self._on_ready,
        )

    @contextlib.asynccontextmanager
    async def running(self, host: Host) -> AsyncIterator[None]:
        """Run the pool for ``host`` (started, in the supervisor role) until the block ends, then drain it."""
        self._host = host
        self._slots = host.config.host.scheduler.across_workers  # for every worker of this run, as event_loop
        self._include_counts(host)
        remove = host.directory.add_listener(self._channels_changed)
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                await self._start_pool()
                tg.start_soon(self._watch_views)
                try:
                    yield
                finally:
                    with anyio.CancelScope(shield=True):
                        await self.pool.stop(host.shared_parts.shutdown_grace + 5.0)
                    tg.cancel_scope.cancel()
        finally:
            remove()

    async def _start_pool(self) -> None:
        assert self._tg is not None
        pool = self.pool

        async def run(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.CancelScope() as scope:
                self._pool_scope = scope
                await pool.run(task_status=task_status)

        await self._tg.start(run)
        states = [f"{s.index}: {s.state} (pid {s.pid})" for s in pool.status()]
        logger.info("%d workers started; %s", pool.count, ", ".join(states))

    async def _restart(self, count: int) -> None:
        """Drain the workers, then start ``count`` new ones (keys move to their new owners with their logs)."""
        old, scope = self.pool, self._pool_scope
        with anyio.CancelScope(shield=True):
            await old.stop(self._started().shared_parts.shutdown_grace + 5.0)
        if scope is not None:
            scope.cancel()
        self.count = count
        self._owners = HashOwners(count)
        self._pool = self._make_pool(count)
        self._views = {}
        self._counts.retire_all()
        await self._start_pool()

    async def _watch_views(self) -> None:
        """Every ``VIEW_SECONDS``: what each worker says of itself (its runtimes, its gateway and breakers)."""
        while True:
            await self._refresh_views()
            await self._clock.sleep(VIEW_SECONDS)

    async def _refresh_views(self) -> None:
        """What each worker says of itself now; its metrics' counts go into ``_counts`` by life (its pid)."""
        async with self._refreshing:
            pool = self.pool
            results = await pool.broadcast("status", {"counts": self._counts.held()})
            if pool is not self.pool:  # the workers were replaced meanwhile: these lives are retired already
                return
            self._views = {i: r for i, r in results.items() if isinstance(r, dict)}
        for index, view in self._views.items():
            try:
                if "counts" in view:
                    self._counts.update(index, view.get("pid"), view["counts"])
            except ValueError as exc:
                logger.warning("worker %d sent counts that do not read: %s", index, exc)

    def _include_counts(self, host: Host) -> None:
        """The workers' turns, calls and tokens in the supervisor's ``/metrics`` and activity."""
        observed = host.observability
        if observed is None:
            return
        observed.activity.include(lambda: [a for v in self._views.values() if isinstance(a := v.get("activity"), dict)])
        if observed.metrics is not None:
            observed.metrics.include(self._counts.totals, self._refresh_for_scrape)

    async def _refresh_for_scrape(self) -> None:
        """The workers' counts now, for a scrape; those they said last if they do not answer in time (a wedged
        worker never holds up ``/metrics``)."""
        with anyio.move_on_after(VIEW_SECONDS):
            await self._refresh_views()

    def _workers_status(self) -> list[dict[str, Json]]:
        """Each worker's state, with its runtimes, gateway and activity as it said last (``VIEW_SECONDS`` old at
        most)."""
        out: list[dict[str, Json]] = []
        for status in self.pool.status():
            view = self._views.get(status.index, {}) if status.state == "ready" else {}
            seen = {name: view.get(name, {}) for name in ("routes", "gateway", "activity")}
            out.append({**status.to_json(), **seen, **self._lease_counts(status.index)})
        return out

    def _lease_counts(self, index: int) -> dict[str, Json]:
        """The slot leases worker ``index`` holds and waits for now (when it leases: ``across_workers``)."""
        link = self._leases.get(index)
        if self._slots != "lease" or link is None:
            return {}
        return {"leases": {"held": link.held, "waiting": link.waiting}}

    def _runtimes(self) -> dict[str, list[str]]:
        """The live runtime keys by profile, across the workers (as they said last)."""
        host = self._host  # ``None`` when asked before the pool runs (a host plugin's start): no profile yet
        merged: dict[str, list[str]] = {route.profile.id: [] for route in host.routes} if host is not None else {}
        for view in self._views.values():
            routes = view.get("routes")
            if isinstance(routes, dict):
                for profile, keys in routes.items():
                    if isinstance(keys, list):
                        merged.setdefault(profile, []).extend(str(k) for k in keys)
        return {profile: sorted(keys) for profile, keys in merged.items()}

    def _owner_peer(self, key: RuntimeKey) -> Peer | None:
        return self.pool.peer(self._owners.owner(str(key)))

    def _spawn(self, fn: Callable[[], Awaitable[object]], name: str) -> None:
        self._started().services.spawn(fn, name=name)

    def _started(self) -> Host:
        assert self._host is not None, "the pool runs only once the host has started"
        return self._host

    def _handlers(self, index: int) -> dict[str, Handler]:
        host = self._started()
        leases = self._leases[index] = LeaseLink(lambda: host.gateways.gateway)
        return {**channel_handlers(host.directory, host.shared_parts.fetchers), **leases.handlers()}

    def _channel_list(self) -> dict[str, Json]:
        directory = self._started().directory
        up: list[Json] = []
        for sid in directory.sids():
            connection = directory.connection(sid)
            if connection is not None:
                up.append(ChannelInfo.of(sid, connection).to_json())
        return {"up": up}

    async def _on_ready(self, index: int, peer: Peer) -> None:
        assert self._tg is not None
        self._tg.start_soon(self._leases[index].serve, peer)  # first: the leases asked for meanwhile wait for it
        if self._reloads:  # it may have read the config before the last reload: have it read it again (a no-op
            await peer.call("reload", {})  # when it read the current one)
        while True:
            version = self._version
            await peer.call("channels", self._channel_list())
            if version == self._version:
                return

    def _channels_changed(self) -> None:
        self._version += 1
        self._started().services.spawn(self._tell_channels, name="telling the workers the channels")

    async def _tell_channels(self) -> None:
        results = await self.pool.broadcast("channels", self._channel_list())
        for index, result in results.items():
            if isinstance(result, BaseException):
                logger.warning("worker %d was not told the channels: %s", index, result)

    async def _reload_workers(self) -> None:
        self._reloads += 1
        wanted = resolved_workers(self._started().config.host.workers)
        if wanted != self.count and self.fixed:
            logger.warning(
                "ishiki.yaml: workers %d; --workers %d given, so it stays %d", wanted, self.count, self.count
            )
        elif wanted != self.count and wanted == 1 and self._one_process is not None:
            self._one_process(self._started(), 1)  # it says so in the log
            return
        elif wanted != self.count and wanted == 1:
            logger.warning("ishiki.yaml: workers 1 takes effect at the next start (this host runs as a supervisor)")
        elif wanted != self.count:
            logger.warning("ishiki.yaml: workers changed from %d to %d; restarting the workers", self.count, wanted)
            await self._restart(wanted)
            return
        results = await self.pool.broadcast("reload", {})
        for index, result in results.items():
            if isinstance(result, BaseException):
                logger.error("worker %d did not reload: %s", index, result)


@contextlib.contextmanager
def socket_folder() -> Iterator[Path]:
    """A private folder for the workers' socket (short enough for a Unix socket path), removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="ishiki-"))
    try:
        yield folder / "workers.sock"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
