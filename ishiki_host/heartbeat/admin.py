"""``HeartbeatServiceAdmin``: the host's heartbeats as an operator's tool manages them (``HeartbeatAdmin`` of
``ishiki_host.plugins.hostplugin``, what ``HostPluginContext.heartbeats`` gives a host plugin)::

    admin = admin_for(host.heartbeats)                 # over the host's one HeartbeatService
    beat = await admin.create(BeatSpec("tea", "Time for tea", "reminder", "0 16 * * *"), created_by="dashboard:ana")
    await admin.pause("tea")                           # kept, never due until resumed
    await admin.resume("tea")                          # scheduled again from now

A beat made here is a user beat, checked as ``set_beat`` checks one (``rules.check_beat``, the host's target
check) but under the operator's rules (``FILE_RULES``: every-minute and far one-time schedules are allowed, as
in ``heartbeats.json``), and each field is checked on its own so ``BeatInvalid.field`` names the one at fault.
Ids starting with ``__`` are the host's own. Managed beats (``heartbeats.json``, or seeded by the host from
``ishiki.yaml``) are read-only here: a change raises ``BeatRefused`` naming their file, as does an unknown id.
Every change pokes the scheduler, so it takes effect from its next tick.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ishiki_host.core.tools import TRUST_ORDER
from ishiki_host.errors import BeatInvalid, BeatRefused, HeartbeatInvalid
from ishiki_host.heartbeat.cron import zone
from ishiki_host.heartbeat.render import format_target
from ishiki_host.heartbeat.rules import FILE_RULES, check_beat, next_run_for
from ishiki_host.store.repos.beat_types import BEAT_TYPES

if TYPE_CHECKING:
    from pathlib import Path

    from ishiki_host.heartbeat.beatfile import TargetValidator
    from ishiki_host.heartbeat.service import HeartbeatService
    from ishiki_host.heartbeat.tools import Poker
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.beat_types import Beat, BeatRun, BeatSpec

__all__ = ["HOST_ID_PREFIX", "HeartbeatServiceAdmin", "admin_for"]

logger = logging.getLogger(__name__)

HOST_ID_PREFIX = "__"
"""Beat ids the host keeps for its own beats (``__clear_images__``): refused for a beat made here."""
_SEEDED_SOURCE = "ishiki.yaml"


class HeartbeatServiceAdmin:
    """A ``HeartbeatAdmin`` over the heartbeat table of one host (see the module docstring).

    ``scheduler`` is poked after every change; ``beat_file`` is the ``heartbeats.json`` that managed beats come
    from, ``seeded`` the beats the host keeps itself (their source is ``ishiki.yaml``).
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        scheduler: Poker,
        default_tz: str,
        target_validator: TargetValidator,
        beat_file: Path,
        seeded: Sequence[BeatSpec] = (),
    ):
        self._store = store
        self._scheduler = scheduler
        self._tz = default_tz
        self._validator = target_validator
        self._beat_file = beat_file
        self._seeded = tuple(seeded)

    async def beats(self) -> list[Beat]:
        """Every beat, managed and not, oldest first."""
        return await self._store.heartbeats.find()

    async def get(self, beat_id: str) -> Beat | None:
        """One beat, or ``None``."""
        return await self._store.heartbeats.get(beat_id)

    async def runs(self, beat_id: str, *, limit: int = 20) -> list[BeatRun]:
        """The beat's last runs, newest first."""
        return await self._store.heartbeats.runs(beat_id, limit=limit)

    def source(self, beat: Beat) -> str | None:
        """``ishiki.yaml`` for a beat the host seeded, the path of ``heartbeats.json`` for another managed beat,
        ``None`` for a user beat."""
        if not beat.managed:
            return None
        return _SEEDED_SOURCE if beat.spec in self._seeded else str(self._beat_file)

    def paused(self, beat: Beat) -> bool:
        """Whether the beat is paused."""
        return beat.paused

    async def create(self, spec: BeatSpec, *, created_by: str) -> Beat:
        """Store and schedule a user beat; ``BeatInvalid`` for a bad field or an id in use."""
        first = self._check(spec)
        if await self.get(spec.id) is not None:
            raise BeatInvalid("id", f"id {spec.id!r} is taken by another beat")
        beat = await self._store.heartbeats.add(spec, next_run=first, created_by=created_by)
        return self._changed(beat, f"created by {created_by}")

    async def update(self, spec: BeatSpec) -> Beat:
        """Replace a user beat's definition; its next run follows the new schedule when that changed."""
        beat = await self._user_beat(spec.id)
        first = self._check(spec)
        next_run = beat.next_run if spec.schedule_key() == beat.spec.schedule_key() else first
        return self._changed(await self._store.heartbeats.update(spec, next_run=next_run), "updated")

    async def pause(self, beat_id: str) -> Beat:
        """Stop a user beat from running, keeping it."""
        await self._user_beat(beat_id)
        return self._changed(await self._store.heartbeats.pause(beat_id), "paused")

    async def resume(self, beat_id: str) -> Beat:
        """Schedule a user beat again from now (its first slot after now)."""
        beat = await self._user_beat(beat_id)
        try:
            first = next_run_for(beat.spec, default_tz=self._tz, after=self._store.clock.now())
        except HeartbeatInvalid as exc:
            raise BeatInvalid("cron", exc.message) from exc
        return self._changed(await self._store.heartbeats.resume(beat_id, next_run=first), "resumed")

    async def delete(self, beat_id: str) -> None:
        """Delete a user beat (its past runs stay)."""
        beat = await self._user_beat(beat_id)
        await self._store.heartbeats.delete(beat_id)
        self._changed(beat, "deleted")

    async def _user_beat(self, beat_id: str) -> Beat:
        beat = await self.get(beat_id)
        if beat is None:
            raise BeatRefused(f"there is no beat {beat_id!r}")
        if beat.managed:
            raise BeatRefused(f"beat {beat_id!r} comes from {self.source(beat)}; change it there")
        return beat

    def _check(self, spec: BeatSpec) -> float:
        """``BeatInvalid`` naming the first bad field of ``spec``; otherwise its first run after now."""
        _check_fields(spec)
        if spec.timezone is not None:
            try:
                zone(spec.timezone)
            except HeartbeatInvalid as exc:
                raise BeatInvalid("timezone", exc.message) from exc
        self._check_target(spec)
        try:
            return check_beat(spec, default_tz=self._tz, now=self._store.clock.now(), rules=FILE_RULES)
        except HeartbeatInvalid as exc:  # every other field is fine by now
            raise BeatInvalid("cron", exc.message) from exc

    def _check_target(self, spec: BeatSpec) -> None:
        target = spec.target
        if target is None:
            return
        if not (target.profile and target.sid and target.channel):
            raise BeatInvalid("target", "a target needs profile, sid and channel")
        reason = self._validator(target)
        if reason:
            raise BeatInvalid("target", f"cannot speak at {format_target(target)}: {reason}")

    def _changed(self, beat: Beat, what: str) -> Beat:
        self._scheduler.poke()
        logger.info("beat %r %s", beat.id, what)
        return beat


def _check_fields(spec: BeatSpec) -> None:
    """The fields checked without the clock or the host: id, type, text, trust."""
    if not spec.id.strip():
        raise BeatInvalid("id", "a beat needs an id")
    if spec.id.startswith(HOST_ID_PREFIX):
        raise BeatInvalid("id", f"id {spec.id!r}: ids starting with {HOST_ID_PREFIX!r} are the host's own")
    if spec.type not in BEAT_TYPES:
        raise BeatInvalid("type", f"type {spec.type!r} is not one of {', '.join(BEAT_TYPES)}")
    if not spec.text.strip():
        raise BeatInvalid("text", "text is empty")
    if spec.trust is not None and spec.trust not in TRUST_ORDER:
        raise BeatInvalid("trust", f"trust {spec.trust!r} is not one of {', '.join(TRUST_ORDER)}")


def admin_for(service: HeartbeatService) -> HeartbeatServiceAdmin:
    """The admin of the beats ``service`` schedules (its store, scheduler, zone, target check and files)."""
    return HeartbeatServiceAdmin(
        service.store,
        scheduler=service.scheduler,
        default_tz=service.default_tz,
        target_validator=service.check_target,
        beat_file=service.watcher.path,
        seeded=service.watcher.seeded,
    )
