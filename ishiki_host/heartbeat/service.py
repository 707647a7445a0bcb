"""``HeartbeatService``: the one heartbeat scheduler of a host, its ``heartbeats.json`` watcher and target check.

The host makes one when its memory store is open and shares it under ``HEARTBEATS`` in its services, where
the heartbeat extension's instances find it (``ishiki_host.host.beats`` does the wiring)::

    service = HeartbeatService(store, runner, config_dir=root, data_dir=data, default_tz="Europe/Berlin",
                               clock=clock, target_validator=check_target, seeded=clear_images_beat("30d"))
    await task_group.start(service.serve)   # seeds heartbeats.json, then the scheduler's start-up pass
    await service.poll()                    # on every reload tick: syncs when the file changed
    service.stop()                          # first thing when the host stops: no new runs

``seeded`` are the beats the host keeps besides the file's (``heartbeat.sync``: the clean-up beat of
``attachments.retention``). ``serve`` reports ready once the file is seeded and the scheduler has made its
start-up pass, so a beat a restart made late is already decided on (run or skipped) by then.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ishiki_host.errors import StoreError
from ishiki_host.heartbeat.beatfile import HEARTBEATS_FILE
from ishiki_host.heartbeat.scheduler import HeartbeatScheduler
from ishiki_host.heartbeat.sync import BeatFileWatcher
from ishiki_host.plugins.services import ServiceKey

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from ishiki_host.core.clock import Clock
    from ishiki_host.heartbeat.beatfile import TargetValidator
    from ishiki_host.heartbeat.scheduler import BeatRunner, SlotClaims
    from ishiki_host.heartbeat.sync import SyncReport
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.beat_types import BeatSpec

__all__ = ["HEARTBEATS", "HeartbeatService"]

logger = logging.getLogger(__name__)


class HeartbeatService:
    """The heartbeat scheduler of one host and what the beat tools share (see the module docstring)."""

    def __init__(
        self,
        store: MemoryStore,
        runner: BeatRunner,
        *,
        config_dir: Path,
        data_dir: Path,
        default_tz: str,
        clock: Clock,
        target_validator: TargetValidator,
        catch_up_seconds: float = 300.0,
        seeded: Sequence[BeatSpec] = (),
        slots: SlotClaims | None = None,
    ):
        self.store = store
        self.default_tz = default_tz
        self.check_target = target_validator
        self.scheduler = HeartbeatScheduler(
            store,
            runner,
            default_tz=default_tz,
            clock=clock,
            data_dir=data_dir,
            catch_up_seconds=catch_up_seconds,
            slots=slots,
        )
        self.watcher = BeatFileWatcher(
            Path(config_dir) / HEARTBEATS_FILE,
            store,
            default_tz=default_tz,
            clock=clock,
            on_change=self.scheduler.poke,
            target_validator=target_validator,
            seeded=seeded,
        )
        self.last_sync: SyncReport | None = None
        self.syncs = 0
        self._synced = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._stopped = False

    def poke(self) -> None:
        """Beats changed: the scheduler looks at the table again (what the beat tools call)."""
        self.scheduler.poke()

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Seed ``heartbeats.json``, then run the scheduler until ``stop`` or cancellation."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._stopped:
                scope.cancel()
            await self.poll(force=True)
            await self.scheduler.serve(task_status=task_status)

    def stop(self) -> None:
        """Stop the scheduler; runs still going are recorded as cut off by the stop."""
        self._stopped = True
        if self._scope is not None:
            self._scope.cancel()

    async def poll(self, *, force: bool = False) -> SyncReport | None:
        """Sync ``heartbeats.json`` if it changed (or ``force``); ``None`` when nothing was done.

        Bad file content never raises (it is logged and kept in ``last_sync``); neither does a store failure,
        which is logged and retried at the next poll.
        """
        try:
            report = await self.watcher.poll(force=force)
        except StoreError as exc:
            logger.error("heartbeats.json could not be synced: %s; retrying at the next reload tick", exc)
            self.watcher.forget()
            return None
        if report is not None:
            self.last_sync = report
            self.syncs += 1
            self._synced.set()
            self._synced = anyio.Event()
        return report

    async def wait_synced(self, after: int) -> None:
        """Until more than ``after`` syncs happened (``syncs`` counts them); bound it with a deadline."""
        while self.syncs <= after:
            await self._synced.wait()


HEARTBEATS: ServiceKey[HeartbeatService] = ServiceKey("heartbeats", HeartbeatService)
"""Where a host shares its ``HeartbeatService`` (``RuntimeContext.services.get(HEARTBEATS)``)."""
