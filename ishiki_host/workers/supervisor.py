"""The supervisor's half of ``ishiki run --workers N``: the worker pool, and what ties it to the host.

``WorkerSupervision`` gives the supervisor's ``HostRole`` (events to the worker that owns their key, beats to the
worker of their target, a reload passed on to every worker, the workers in the host's status) and, once the
host has started, runs the pool (``running``): it serves each worker the channel operations of its runtimes
(``ishiki_host.workers.serving``) and keeps every worker told which connections are up, the whole list at each
(re)start and after each change. The list is sent again when it changed while it was being sent, so a worker
that becomes ready never misses a change (it counts as ready only once its ``on_ready`` returned).

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
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ishiki_host.config.host import resolved_workers
from ishiki_host.host.roles import HostRole
from ishiki_host.workers.outlets import ChannelInfo
from ishiki_host.workers.owners import HashOwners
from ishiki_host.workers.placement import WorkerBeats, WorkerPlacement
from ishiki_host.workers.pool import WorkerPool
from ishiki_host.workers.serving import channel_handlers

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus

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
    ):
        self.root = root
        self.count = count
        self.fixed = fixed
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
        )

    def _make_pool(self, count: int) -> WorkerPool:
        assert self._socket_path is not None
        options = self._options
        return WorkerPool(
            count,
            lambda index, path: worker_command(self.root, index, count, path, options),
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
        await self._start_pool()

    async def _watch_views(self) -> None:
        """Every ``VIEW_SECONDS``: what each worker says of itself (its runtimes, its gateway and breakers)."""
        while True:
            results = await self.pool.broadcast("status", {})
            self._views = {i: r for i, r in results.items() if isinstance(r, dict)}
            await self._clock.sleep(VIEW_SECONDS)

    def _workers_status(self) -> list[dict[str, Json]]:
        """Each worker's state, with its runtimes and gateway as it said last (``VIEW_SECONDS`` old at most)."""
        out: list[dict[str, Json]] = []
        for status in self.pool.status():
            view = self._views.get(status.index, {}) if status.state == "ready" else {}
            out.append({**status.to_json(), "routes": view.get("routes", {}), "gateway": view.get("gateway", {})})
        return out

    def _runtimes(self) -> dict[str, list[str]]:
        """The live runtime keys by profile, across the workers (as they said last)."""
        merged: dict[str, list[str]] = {route.profile.id: [] for route in self._started().routes}
        for view in self._views.values():
            routes = view.get("routes")
            if isinstance(routes, dict):
                for profile, keys in routes.items():
                    if isinstance(keys, list):
                        merged.setdefault(profile, []).extend(str(k) for k in keys)
        return {profile: sorted(keys) for profile, keys in merged.items()}

    def _started(self) -> Host:
        assert self._host is not None, "the pool runs only once the host has started"
        return self._host

    def _handlers(self, index: int) -> dict[str, Handler]:
        host = self._started()
        return channel_handlers(host.directory, host.shared_parts.fetchers)

    def _channel_list(self) -> dict[str, Json]:
        directory = self._started().directory
        up: list[Json] = []
        for sid in directory.sids():
            connection = directory.connection(sid)
            if connection is not None:
                up.append(ChannelInfo.of(sid, connection).to_json())
        return {"up": up}

    async def _on_ready(self, index: int, peer: Peer) -> None:
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
