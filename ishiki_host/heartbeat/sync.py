"""Seeding ``heartbeats.json`` into the heartbeat table: at every start, and whenever the file changes.

The host owns the polling loop; it calls ``sync_from_file`` at start, or keeps a ``BeatFileWatcher`` and calls
``poll()`` on its own rhythm (the watcher syncs only when the file's modification time, size or inode moved).

    report = await sync_from_file(config_dir / HEARTBEATS_FILE, store, default_tz="Europe/Berlin", clock=clock)
    for error in report.errors:
        print(error)            # heartbeats.json: [2]: beat 'stretch': cron '0 25 * * *': bad hour field '25'

**Seeded beats.** The host passes the beats it keeps by default (``seeded``: the reserved clean-up beat of
``attachments.retention``, ``heartbeat.janitor.clear_images_beat``). They are managed beats like the file's;
an entry of the file with the same id (valid or not) replaces a seeded beat. Without a file, the seeded beats
are still synced (and a reserved beat no longer seeded is removed), while every other managed beat stays as
it was; a file that cannot be read or parsed changes nothing, seeded beats included.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ishiki_host.errors import HeartbeatInvalid
from ishiki_host.heartbeat.beatfile import BeatFile, conflict_errors, parse_beat_file, read_beat_file
from ishiki_host.heartbeat.rules import CLEAR_IMAGES_ID, next_run_for

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.heartbeat.beatfile import TargetValidator
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.beat_types import BeatSpec, BeatSyncReport

__all__ = ["BeatFileWatcher", "SyncReport", "sync_from_file"]

logger = logging.getLogger(__name__)

_RESERVED = frozenset({CLEAR_IMAGES_ID})
"""The ids the host may seed: without a file, these follow ``seeded`` and no other managed beat is touched."""


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What one sync did. ``synced`` is ``None`` when the table was left alone (no file, or not JSON)."""

    file: Path
    found: bool
    errors: tuple[HeartbeatInvalid, ...] = ()
    synced: BeatSyncReport | None = None

    @property
    def changed(self) -> bool:
        """Whether managed beats were added, updated or removed (the scheduler should re-arm)."""
        return self.synced is not None and self.synced.changed

    def summary(self) -> str:
        """One line for the log: what changed and how many entries were skipped."""
        if not self.found and self.synced is None:
            return f"{self.file}: no file; managed beats unchanged"
        if self.synced is None:
            return f"{self.file}: not loaded; managed beats unchanged"
        s = self.synced
        counts = f"{len(s.added)} added, {len(s.updated)} updated, {len(s.removed)} removed"
        return f"{self.file}: {counts}, {len(self.errors)} skipped"


async def sync_from_file(
    path: Path,
    store: MemoryStore,
    default_tz: str,
    clock: Clock,
    *,
    target_validator: TargetValidator | None = None,
    seeded: Sequence[BeatSpec] = (),
) -> SyncReport:
    """Make the managed beats equal to the valid entries of ``path`` and the ``seeded`` beats it does not
    replace (module docstring); never raises for bad file content.

    Invalid entries are skipped and their stored beats kept; a file that is not a JSON array, or cannot be
    read, leaves the table alone. Every error is logged as a warning and returned in the report.
    """
    try:
        text = await read_beat_file(path)
        if text is None and not seeded and not await _reserved_stored(store):
            return SyncReport(path, found=False)
        parsed = BeatFile()
        if text is not None:
            parsed = parse_beat_file(
                text, file=str(path), default_tz=default_tz, now=clock.now(), target_validator=target_validator
            )
    except HeartbeatInvalid as exc:
        logger.warning("%s", exc)
        return SyncReport(path, found=True, errors=(exc,))
    now = clock.now()

    def schedule(spec: BeatSpec) -> float | None:
        return next_run_for(spec, default_tz=default_tz, after=now)

    specs, keep = await _with_seeded(parsed, seeded, store, found=text is not None)
    synced = await store.heartbeats.sync_managed(specs, schedule=schedule, keep_ids=keep)
    report = SyncReport(path, text is not None, (*parsed.errors, *conflict_errors(synced, str(path))), synced)
    for error in report.errors:
        logger.warning("%s", error)
    logger.info("%s", report.summary())
    return report


async def _reserved_stored(store: MemoryStore) -> bool:
    """Whether a reserved beat is stored as managed (one the host seeded before, to remove if no longer seeded)."""
    return any(beat.id in _RESERVED for beat in await store.heartbeats.find(managed=True))


async def _with_seeded(
    parsed: BeatFile, seeded: Sequence[BeatSpec], store: MemoryStore, *, found: bool
) -> tuple[list[BeatSpec], frozenset[str]]:
    """The specs and kept ids to sync: the file's, then the seeded beats whose ids the file does not use; with
    no file, every managed beat but the reserved ones is kept as stored."""
    taken = {spec.id for spec in parsed.specs} | parsed.keep_ids
    specs = [*parsed.specs, *(spec for spec in seeded if spec.id not in taken)]
    if found:
        return specs, parsed.keep_ids
    stored = {beat.id for beat in await store.heartbeats.find(managed=True)}
    return specs, frozenset(stored - _RESERVED)


class BeatFileWatcher:
    """Syncs ``heartbeats.json`` when it changed since the last poll; calls ``on_change`` when beats moved.

    The first ``poll()`` always syncs (the start-up seeding). Pass ``scheduler.poke`` as ``on_change``.
    """

    def __init__(
        self,
        path: Path,
        store: MemoryStore,
        *,
        default_tz: str,
        clock: Clock,
        on_change: Callable[[], None] | None = None,
        target_validator: TargetValidator | None = None,
        seeded: Sequence[BeatSpec] = (),
    ):
        self.path = path
        self.seeded = tuple(seeded)
        self._store = store
        self._default_tz = default_tz
        self._clock = clock
        self._on_change = on_change
        self._validator = target_validator
        self._seen: tuple[int, int, int] | bool | None = False  # False: never looked

    async def poll(self, *, force: bool = False) -> SyncReport | None:
        """Sync if the file changed (or ``force``); ``None`` when there was nothing to do."""
        signature = await anyio.to_thread.run_sync(_signature, self.path)
        if not force and signature == self._seen:
            return None
        self._seen = signature
        report = await sync_from_file(
            self.path, self._store, self._default_tz, self._clock, target_validator=self._validator, seeded=self.seeded
        )
        if report.changed and self._on_change is not None:
            self._on_change()
        return report

    def forget(self) -> None:
        """Forget the file's last state, so the next ``poll`` syncs (after a sync the store could not finish)."""
        self._seen = False


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
