"""The heartbeat scheduler: one timer for the earliest due beat, every run recorded.

    scheduler = HeartbeatScheduler(store, runner, default_tz="Europe/Berlin", clock=clock)
    await task_group.start(scheduler.serve)     # returns once start-up is done
    ...
    scheduler.poke()                            # after beats changed: re-arm the timer

Rules (docs/heartbeats.md has the why):

- A due beat is rescheduled to its next slot *before* it runs, so a failed run is never retried before that
  slot, and a run still going when its next slot comes makes that slot a ``skipped`` run (no overlap).
- A slot that passed ``catch_up_seconds`` ago or more (the host was down, the machine slept) is ``skipped``
  and logged; a beat that missed several slots runs at most once, for the latest of them.
- A one-time beat is spent after its run: deleted, or for a managed one kept with no next run (deleting it
  would make the next ``heartbeats.json`` sync add it again).
- ``__clear_images__`` is run here, without the runner (see ``heartbeat.janitor``).
- Runs are bounded by ``run_timeout`` on the injected clock and at most ``max_concurrent`` run at once.
- With ``slots`` (a host of a fleet: ``store.pg.slots``), a slot runs only on the host that claims it first;
  the others move the beat on to its next slot, as if it had run (the run is recorded where it ran). A claim
  that cannot be made (the database is away) runs nothing: a slot is run once at most rather than twice.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

from ishiki_host.errors import HeartbeatInvalid, StoreError
from ishiki_host.heartbeat.cron import parse_cron
from ishiki_host.heartbeat.janitor import clear_images
from ishiki_host.heartbeat.prompts import prompt_for
from ishiki_host.heartbeat.render import format_time
from ishiki_host.heartbeat.rules import CLEAR_IMAGES_ID, parse_duration

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus

    from ishiki_host.core.clock import Clock
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.beat_types import Beat
    from ishiki_host.store.repos.heartbeats import RunOutcome

__all__ = ["BeatRunner", "HeartbeatScheduler", "SlotClaims"]

logger = logging.getLogger(__name__)

_DUE_BATCH = 100
_OUTPUT_LIMIT = 20_000
_STORE_RETRY = 30.0
_PRUNE_EVERY = 86400.0


class BeatRunner(Protocol):
    """Runs a beat's prompt and returns the output to record; raising records the run as failed.

    With a target: ``runtime.wake(prompt)`` at background priority on the target's runtime. Without one: a
    background model call whose reply is the output.
    """

    async def run(self, beat: Beat, prompt: str) -> str:
        """Run ``beat`` with ``prompt`` (from ``prompt_for``) and return what it produced."""
        ...


class SlotClaims(Protocol):
    """Which host of a fleet runs a beat's slot (see the module docstring)."""

    async def claim_slot(self, beat_id: str, due_at: float) -> bool:
        """Whether this host runs the slot of ``beat_id`` due at ``due_at``: the first host to ask does."""
        ...


class HeartbeatScheduler:
    """Sleeps until the earliest due beat, starts its run, records it, and re-arms."""

    def __init__(
        self,
        store: MemoryStore,
        runner: BeatRunner,
        *,
        default_tz: str = "UTC",
        clock: Clock | None = None,
        data_dir: Path | None = None,
        catch_up_seconds: float = 300.0,
        run_timeout: float = 900.0,
        max_concurrent: int = 4,
        keep_runs_seconds: float = 30 * 86400.0,
        max_nap: float = 3600.0,
        slots: SlotClaims | None = None,
    ):
        self._store = store
        self._slots = slots
        self._runner = runner
        self._tz = default_tz
        self._clock = clock or store.clock
        self._data_dir = data_dir or store.path.parent
        self._catch_up = catch_up_seconds
        self._run_timeout = run_timeout
        self._limiter = anyio.CapacityLimiter(max(1, max_concurrent))
        self._keep_runs = keep_runs_seconds
        self._max_nap = max_nap
        self._inflight: set[str] = set()
        self._poked = False
        self._nap_scope: anyio.CancelScope | None = None
        self._armed_until: float | None = None
        self._state_changed = anyio.Event()
        self._last_prune: float | None = None

    @property
    def running(self) -> frozenset[str]:
        """Ids of the beats with a run going (or waiting for a free slot)."""
        return frozenset(self._inflight)

    def poke(self) -> None:
        """Beats changed: look at the table again now (safe to call any time, from the event loop)."""
        self._poked = True
        self._armed_until = None  # no longer settled until the timer is armed again
        if self._nap_scope is not None:
            self._nap_scope.cancel()

    async def settled(self) -> None:
        """Return once no run is going and the timer is armed for a time still ahead (for tests and stops).

        It waits as long as that takes: callers bound it (``anyio.fail_after``).
        """
        while self._inflight or self._armed_until is None or self._armed_until <= self._clock.now():
            await self._state_changed.wait()

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled: start-up (crashed runs failed, spent beats dropped), then the timer loop."""
        await self._start_up()
        async with anyio.create_task_group() as tg:
            task_status.started()
            while True:
                self._poked = False
                try:
                    await self._run_due(tg)
                    delay = await self._delay()
                except StoreError as exc:
                    logger.error("heartbeat scheduler: %s; retrying in %g s", exc, _STORE_RETRY)
                    delay = _STORE_RETRY
                await self._nap(delay)

    async def _start_up(self) -> None:
        hb = self._store.heartbeats
        failed = await hb.fail_unfinished_runs()
        if failed:
            logger.warning("%d beat run(s) were cut off by the last stop; recorded as failed", failed)
        await self._prune()
        for beat in await hb.find(managed=False):
            if not beat.recurring and beat.next_run is None and beat.last_run is not None:
                await hb.delete(beat.id)

    async def _prune(self) -> None:
        now = self._clock.monotonic()
        if self._last_prune is None or now - self._last_prune >= _PRUNE_EVERY:
            self._last_prune = now
            await self._store.heartbeats.prune_runs(self._keep_runs)

    async def _delay(self) -> float:
        await self._prune()
        upcoming = await self._store.heartbeats.next_due()
        if upcoming is None or upcoming.next_run is None:
            return self._max_nap
        return max(0.0, min(upcoming.next_run - self._clock.now(), self._max_nap))

    async def _nap(self, seconds: float) -> None:
        if self._poked:
            return
        self._armed_until = self._clock.now() + seconds
        self._changed()
        try:
            with anyio.CancelScope() as scope:
                self._nap_scope = scope
                await self._clock.sleep(seconds)
        finally:
            self._nap_scope = None
            self._armed_until = None
            self._changed()

    def _changed(self) -> None:
        self._state_changed.set()
        self._state_changed = anyio.Event()

    async def _run_due(self, tg: TaskGroup) -> None:
        while True:
            now = self._clock.now()
            due = await self._store.heartbeats.due(now=now, limit=_DUE_BATCH)
            if not due:
                return
            for beat in due:
                await self._take(beat, now, tg)

    async def _take(self, beat: Beat, now: float, tg: TaskGroup) -> None:
        assert beat.next_run is not None  # ``due`` returns scheduled beats only
        tz = beat.timezone or self._tz
        try:
            cron = parse_cron(beat.cron, tz)
        except HeartbeatInvalid as exc:
            logger.error("beat %r paused: %s", beat.id, exc.message)
            await self._record(beat.id, "failed", f"cannot schedule: {exc.message}; paused until it is changed")
            await self._store.heartbeats.reschedule(beat.id, next_run=None)
            return
        following = cron.next_after(now) if beat.recurring else None
        slot = max(beat.next_run, (cron.latest_at_or_before(now) if beat.recurring else None) or beat.next_run)
        if beat.id in self._inflight:
            await self._record(beat.id, "skipped", f"due {format_time(slot, tz)}: the previous run is still going")
            await self._move_on(beat, following)
        elif now - slot >= self._catch_up:
            late = f"due {format_time(slot, tz)}, {now - slot:.0f} s ago (catch-up limit {self._catch_up:g} s)"
            logger.warning("beat %r missed: %s", beat.id, late)
            await self._record(beat.id, "skipped", f"missed: {late}")
            await self._move_on(beat, following)
        elif not await self._claimed(beat, slot):
            await self._move_on(beat, following)
        else:
            await self._store.heartbeats.reschedule(beat.id, next_run=following, last_run=now)
            self._inflight.add(beat.id)
            tg.start_soon(self._run, beat, slot)

    async def _claimed(self, beat: Beat, slot: float) -> bool:
        """Whether this host runs ``slot`` of ``beat``: always on one host; in a fleet, when its claim wins."""
        if self._slots is None:
            return True
        try:
            if await self._slots.claim_slot(beat.id, slot):
                return True
            logger.debug("beat %r: its slot runs on another host of the fleet", beat.id)
        except Exception as exc:  # the fleet's database is away: not run rather than run twice
            logger.warning("beat %r not run: its slot could not be claimed in the fleet (%s)", beat.id, exc)
        return False

    async def _move_on(self, beat: Beat, following: float | None) -> None:
        if beat.recurring:
            await self._store.heartbeats.reschedule(beat.id, next_run=following)
        else:
            await self._store.heartbeats.reschedule(beat.id, next_run=None, last_run=self._clock.now())
            await self._retire(beat.id)

    async def _retire(self, beat_id: str) -> None:
        current = await self._store.heartbeats.get(beat_id)
        # Changed while it ran (made recurring, or given a new time): it is no longer spent.
        if current is None or current.recurring or current.next_run is not None or current.managed:
            return
        await self._store.heartbeats.delete(beat_id)

    async def _record(self, beat_id: str, outcome: RunOutcome, output: str) -> None:
        run = await self._store.heartbeats.start_run(beat_id)
        await self._store.heartbeats.finish_run(run.id, outcome, output)

    async def _run(self, beat: Beat, slot: float) -> None:
        try:
            async with self._limiter:
                run = await self._store.heartbeats.start_run(beat.id)
                try:
                    outcome, output = await self._execute(beat, slot)
                except anyio.get_cancelled_exc_class():
                    with anyio.move_on_after(5, shield=True):
                        await self._store.heartbeats.finish_run(run.id, "failed", "the host stopped during the run")
                    raise
                await self._store.heartbeats.finish_run(run.id, outcome, output[:_OUTPUT_LIMIT])
            if not beat.recurring:
                await self._retire(beat.id)
        except StoreError as exc:
            logger.error("beat %r: the run could not be recorded: %s", beat.id, exc)
        finally:
            self._inflight.discard(beat.id)
            self._changed()

    async def _execute(self, beat: Beat, slot: float) -> tuple[RunOutcome, str]:
        try:
            if beat.id == CLEAR_IMAGES_ID:
                age = parse_duration(beat.text)
                report = await clear_images(self._store, self._data_dir, age)
                return ("failed" if report.problems else "ok"), report.summary(age)
            prompt = prompt_for(beat, default_tz=self._tz, now=self._clock.now(), scheduled_for=slot)
            return "ok", await self._call(beat, prompt)
        except TimeoutError:
            logger.warning("beat %r timed out after %g s", beat.id, self._run_timeout)
            return "failed", f"timed out after {self._run_timeout:g} s"
        except Exception as exc:  # the runner is a boundary: whatever it raises is this run's failure
            logger.warning("beat %r failed: %s: %s", beat.id, type(exc).__name__, exc)
            return "failed", f"{type(exc).__name__}: {exc}"

    async def _call(self, beat: Beat, prompt: str) -> str:
        outcome: list[str | Exception] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._deadline, tg.cancel_scope)
            try:
                outcome.append(await self._runner.run(beat, prompt))
            except Exception as exc:
                outcome.append(exc)
            tg.cancel_scope.cancel()
        if not outcome:
            raise TimeoutError
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return str(outcome[0] or "")

    async def _deadline(self, scope: anyio.CancelScope) -> None:
        await self._clock.sleep(self._run_timeout)
        scope.cancel()
