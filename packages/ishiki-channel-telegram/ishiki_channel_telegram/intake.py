"""What a connection does with each update ``getUpdates`` returned or a webhook delivered: recognise repeats,
dispatch, retry or set aside, then confirm.

Confirmation follows the Bot API: the next ``offset`` is the id of the last update received + 1, and the
confirmed offset moves past an update once it and every update received before it are handled (durable in
the host, a repeat, or set aside; ``ishiki_channel_telegram.window``). Ids are not assumed to grow: after a
week without updates Telegram picks the next id at random, which may be below the offset. A repeat is told
from a new update by a bounded memory of the ids handled (``RecentIds``) and by the updates still in hand,
not by "below the offset"; an id below the offset received last that is not a recent one starts a new
numbering: a reset, logged once, and the memory is cleared.

Two lanes (polling: ``run`` and ``submit``): the plain updates are dispatched one at a time, in the order
they came, so the messages of a chat are appended in order; a command the host answers at once goes ahead
of them (``ishiki_channel_telegram.ahead``: what counts as one, how many at once, and what overtaking means).
Polling does not wait for the lanes: ``next_offset`` asks past the updates still being dispatched, so a
``/stop`` sent while a message waits on a running turn is fetched and answered. Telegram forgets what an
offset passes, so the updates not yet handled are written to the state file first (``PollState.held``, on
the disk before the poll) and a restart takes them from there; the confirmed offset saved never passes an
update that is not handled. When that file cannot be written, polling waits for the lanes instead. At most
``UNCONFIRMED`` updates are in hand: beyond that polling waits too.

A dispatch that fails is handled by what the host raised (``ishiki_host.errors.ChannelError``):

- ``EventRejected`` (an event the host will never take): the update is set aside at once;
- a ``ChannelError`` with ``fatal = False`` (the host cannot take input now: it is stopping, its disk is
  full): retried with back-off, not counted against the update, since every later update would fail alike;
- anything else: retried with back-off; after the account's ``update_tries`` failed tries the update is set
  aside. The count is saved with the offset (``PollState.failing``), so restarts do not reset it.

A webhook delivery (``take``) gets one try per request instead of retries with back-off: a failure answers
"not yet" and Telegram sends the update again later, with its own back-off, so a request never waits on a
sleep. The tries are counted alike (kept per update id while the connection runs, so two failing updates
that Telegram alternates are both set aside in the end); plain updates are taken one at a time, as polling
takes them, and a command goes ahead of them in the same way. A delivery of an update already being taken
waits for that try to end. There is no offset: the ids of the updates handled are saved instead
(``PollState.recent``), so a redelivery after a restart is recognised.

Setting aside logs one line (update id and why), counts it (``PollState.set_aside``, shown by the
connection's ``status()``), keeps the update in ``telegram-set-aside.jsonl`` (``SetAsideFile``), and confirms
past it. A malformed update (the shaper raised ``EventInvalid``) is set aside the same way.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from ishiki_host import Backoff, RandomSource
from ishiki_host.errors import ChannelError, EventInvalid, EventRejected

from ishiki_channel_telegram.ahead import AHEAD, is_command
from ishiki_channel_telegram.aside import SetAsideFile
from ishiki_channel_telegram.recent import RecentIds
from ishiki_channel_telegram.shaping import Shaped, Shaper, update_kind
from ishiki_channel_telegram.state import RECENT_SAVED, OffsetSaver, PollState
from ishiki_channel_telegram.window import Window

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus
    from ishiki_host import ChannelHost, Json

    from ishiki_channel_telegram.config import TelegramAccount

__all__ = ["UNCONFIRMED", "Intake"]

UNCONFIRMED = 100
"""How many updates polling holds fetched and not yet confirmed before it waits (a full ``getUpdates`` batch)."""

_TRIES_KEPT = 256  # failing updates whose tries are counted at once (webhook mode: Telegram may give up on one)


class _SetAside(Exception):
    """The update being handled is to be set aside (``why`` says why; ``malformed``: the channel's own finding,
    logged as a warning, not the host's failure)."""

    def __init__(self, why: str, *, malformed: bool = False):
        self.why = why
        self.malformed = malformed
        super().__init__(why)


@dataclasses.dataclass(frozen=True, slots=True)
class _Update:
    """One update to take: as it came, its id, and its events (or why it is to be set aside)."""

    raw: dict[str, Any]
    update_id: int
    shaped: list[Shaped] | _SetAside


class Intake:
    """The updates of one running connection (see the module docstring).

    ``own(chat, message_id)`` tells a message the bot sent itself (never dispatched); ``state`` (and
    ``last_set_aside``) is where the last run stopped, and then where this one is.
    """

    def __init__(
        self,
        host: ChannelHost,
        account: TelegramAccount,
        rng: RandomSource,
        saver: OffsetSaver,
        state: PollState,
        own: Callable[[int, int], bool],
        last_set_aside: dict[str, Json] | None = None,
    ):
        self._host = host
        self._account = account
        self._rng = rng
        self._saver = saver
        self._own = own
        self._log = host.logger
        self._aside = SetAsideFile(host.state_dir, logger=self._log)
        self._recent = RecentIds()
        for update_id in state.recent:
            self._recent.add(update_id)
        self._tries: dict[int, int] = dict([state.failing]) if state.failing is not None else {}
        self._window = Window()
        self._received = state.offset  # the last id received + 1: what the next getUpdates asks for
        self._ahead = anyio.Semaphore(AHEAD)
        self._one_at_a_time = anyio.Lock()
        self._taking: dict[int, anyio.Event] = {}  # webhook mode: the updates being taken, by id
        self._tasks: TaskGroup | None = None
        self._plain: deque[_Update] = deque()  # bounded by UNCONFIRMED
        self._queued = anyio.Event()
        self._base = state  # the state but for what the window holds (polling: ``held`` and ``recent``)
        self.last_set_aside = last_set_aside

    @property
    def state(self) -> PollState:
        """What a restart resumes from, the updates in hand included."""
        in_hand: dict[str, Any] = {"held": self._window.held()}
        if self._account.mode != "webhook":
            in_hand["recent"] = self._window.ahead()
        return dataclasses.replace(self._base, **in_hand)

    @property
    def offset(self) -> int | None:
        """The confirmed ``offset``: every update before it is handled (``None``: whatever Telegram holds)."""
        return self._base.offset

    async def run(self, shaper: Shaper, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the lanes until cancelled, first taking the updates a previous run left ``held``."""
        async with anyio.create_task_group() as tg:
            self._tasks = tg
            tg.start_soon(self._plain_lane)
            try:
                await self.submit(list(self._base.held), shaper)
                task_status.started()
                await anyio.sleep_forever()
            finally:
                self._tasks = None
                self._plain.clear()

    async def next_offset(self) -> int | None:
        """The ``offset`` of the next ``getUpdates``, once asking for it loses nothing (see the module
        docstring): past every update received, with those not handled yet on the disk."""
        while len(self._window) >= UNCONFIRMED:
            await self._window.changed()
        if self._window.pending and not await self._kept_or_handled():
            await self.settled()  # they cannot be kept: Telegram must keep them until they are handled
        return self._received

    async def _kept_or_handled(self) -> bool:
        """Wait until the updates in hand are on the disk or all handled, whichever comes first (quick
        dispatches need no wait for the disk); False when writing them failed."""
        kept = True

        async def on_disk() -> None:
            nonlocal kept
            kept = await self._saver.written()
            tg.cancel_scope.cancel()

        async def handled() -> None:
            await self.settled()
            tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(on_disk)
            tg.start_soon(handled)
        return kept

    async def settled(self) -> None:
        """Return once every update received by polling so far is handled (none still being dispatched)."""
        while self._window.pending:
            await self._window.changed()

    async def submit(self, updates: list[Any], shaper: Shaper) -> bool:
        """Hand each update of a batch to its lane (a command may wait for a free place); False when the batch
        held nothing to confirm (no update had an id)."""
        progressed, handed = not updates, False
        for raw in updates:
            update_id = self._update_id(raw)
            if update_id is None:
                continue
            progressed = True
            if update_id in self._window:
                self._log.debug("telegram: update %d came again while in hand; left to the first", update_id)
                continue
            repeat = self._is_repeat(update_id)
            if not repeat:
                self._note_numbering(update_id)
            self._received = update_id + 1
            self._window.add(update_id, raw)
            if repeat:
                self._confirm(update_id)
                continue
            await self._hand(_Update(raw, update_id, self._prepare(shaper, raw, update_id)))
            handed = True
        if handed:
            self._save()
        return progressed

    async def take(self, update: Any, shaper: Shaper) -> bool:
        """Handle one update a webhook delivered, with one try (see the module docstring): True once it is
        handled (durable, a repeat, set aside, ignored), False when Telegram should send it again."""
        update_id = self._update_id(update)
        if update_id is None:
            return True  # nothing could ever be done with it: confirm it
        while (taking := self._taking.get(update_id)) is not None:
            await taking.wait()
        if self._is_repeat(update_id):
            return True
        done = self._taking[update_id] = anyio.Event()
        try:
            item = _Update(update, update_id, self._prepare(shaper, update, update_id))
            async with self._ahead if self._goes_ahead(item) else self._one_at_a_time:
                if not await self._take(item, retry=False):
                    return False
            self._recent.add(update_id)
            self._tries.pop(update_id, None)
            recent = (*self._base.recent[-(RECENT_SAVED - 1) :], update_id)
            self._save(offset=None, failing=self._failing_but(update_id), recent=recent)
            return True
        finally:
            del self._taking[update_id]
            done.set()

    async def _hand(self, item: _Update) -> None:
        tasks = self._tasks
        if tasks is None:
            raise RuntimeError("Intake.submit needs the lanes running (Intake.run)")
        if not self._goes_ahead(item):
            self._plain.append(item)
            self._queued.set()
            return
        await self._ahead.acquire()
        tasks.start_soon(self._go_ahead, item)

    def _goes_ahead(self, item: _Update) -> bool:
        return not isinstance(item.shaped, _SetAside) and is_command(item.shaped, self._host.command_names)

    async def _plain_lane(self) -> None:
        while True:
            while self._plain:  # all that is queued, without a trip through the event loop for each
                await self._handle(self._plain.popleft())
            self._queued = anyio.Event()
            await self._queued.wait()

    async def _go_ahead(self, item: _Update) -> None:
        try:
            await self._handle(item)
        finally:
            self._ahead.release()

    async def _handle(self, item: _Update) -> None:
        """Take a polled update (retrying as long as it takes), then confirm it."""
        await self._take(item, retry=True)
        self._recent.add(item.update_id)
        self._tries.pop(item.update_id, None)
        self._confirm(item.update_id)

    def _confirm(self, update_id: int) -> None:
        """Mark a polled update handled: the offset moves past the handled ones received first."""
        offset = self._window.done(update_id)
        changes: dict[str, Any] = {"failing": self._failing_but(update_id)}
        if self._account.mode == "webhook":  # the updates a previous run in polling mode left held
            changes["recent"] = (*self._base.recent[-(RECENT_SAVED - 1) :], update_id)
        elif offset is not None:
            changes["offset"] = offset
        self._save(**changes)

    def _update_id(self, update: Any) -> int | None:
        update_id = update.get("update_id") if isinstance(update, dict) else None
        if not isinstance(update_id, int) or isinstance(update_id, bool):
            self._log.warning("telegram account %s: skipped an update without an update_id", self._account.label)
            return None
        return update_id

    def _is_repeat(self, update_id: int) -> bool:
        if update_id not in self._recent:
            return False
        self._log.debug("telegram: update %d came again; confirmed without a second dispatch", update_id)
        return True

    def _note_numbering(self, update_id: int) -> None:
        """Log a reset when ids went backwards (Telegram renumbers after a long pause); forget the old ids."""
        offset = self._received
        if offset is not None and update_id < offset:
            self._log.warning(
                "telegram account %s: update ids went backwards (update %d, after %d): Telegram renumbers "
                "updates after a long pause; following the new numbering",
                self._account.label,
                update_id,
                offset - 1,
            )
            self._recent.clear()

    async def _take(self, item: _Update, *, retry: bool) -> bool:
        """Dispatch the update's events; False when a try failed and ``retry`` is off (it is to come again)."""
        try:
            if isinstance(item.shaped, _SetAside):
                raise item.shaped
            for shaped in item.shaped:
                if not await self._dispatch(shaped, item.update_id, retry=retry):
                    return False
        except _SetAside as aside:
            await self._set_aside(item.raw, item.update_id, aside)
        return True

    def _prepare(self, shaper: Shaper, update: dict[str, Any], update_id: int) -> list[Shaped] | _SetAside:
        """The update's events to dispatch, or why it is to be set aside."""
        if update_kind(update) is None:
            kinds = sorted(key for key in update if key != "update_id")
            self._log.debug("telegram: ignored update %d of kind %s", update_id, ", ".join(kinds) or "(none)")
            return []
        try:
            shaped = shaper.shape(update, self._host.clock.now())
        except EventInvalid as exc:
            return _SetAside(str(exc), malformed=True)
        return [item for item in shaped if not self._own(item.chat_id, int(item.event.message_id))]

    async def _dispatch(self, shaped: Shaped, update_id: int, *, retry: bool) -> bool:
        backoff = Backoff(self._rng, maximum=self._account.backoff_max)
        while True:
            try:
                await self._host.dispatch(shaped.event, shaped.attachments)
                return True
            except EventRejected as exc:
                raise _SetAside(f"the host rejected it ({exc})") from None
            except Exception as exc:
                delay = backoff.next_delay() if retry else None
                self._failed(exc, update_id, delay)
                if delay is None:
                    return False
                await self._host.clock.sleep(delay)

    def _failed(self, exc: Exception, update_id: int, delay: float | None) -> None:
        """Count a failed try (unless the host called it passing) and log it; ``_SetAside`` after the last."""
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ChannelError) and not exc.fatal:
            tries = "the host cannot take input for now"
        else:
            count = self._count_try(update_id)
            if count >= self._account.update_tries:
                raise _SetAside(f"{count} tries failed, the last with {error}") from None
            tries = f"try {count} of {self._account.update_tries}"
        again = "Telegram sends it again" if delay is None else f"retrying in {delay:.1f} s"
        label = self._account.label
        self._log.error(
            "telegram account %s: dispatching update %d failed (%s), %s; %s", label, update_id, error, tries, again
        )

    def _count_try(self, update_id: int) -> int:
        count = self._tries.pop(update_id, 0) + 1
        self._tries[update_id] = count  # the most recent last: the oldest are forgotten first
        while len(self._tries) > _TRIES_KEPT:
            del self._tries[next(iter(self._tries))]
        self._save(failing=(update_id, count))
        return count

    async def _set_aside(self, update: dict[str, Any], update_id: int, aside: _SetAside) -> None:
        what = "malformed update" if aside.malformed else "update"
        self._tries.pop(update_id, None)
        self._save(failing=self._failing_but(update_id), set_aside=self._base.set_aside + 1)
        self.last_set_aside = {"updateId": update_id, "why": f"{what}: {aside.why}"}
        await self._aside.keep(update_id, update, f"{what}: {aside.why}", self._host.clock.now())
        self._log.log(
            logging.WARNING if aside.malformed else logging.ERROR,
            "telegram account %s: set aside %s %d: %s; later updates go on (kept in %s)",
            self._account.label,
            what,
            update_id,
            aside.why,
            self._aside.path.name,
        )

    def _failing_but(self, update_id: int) -> tuple[int, int] | None:
        """The saved failing update, unless it is ``update_id`` (handled now)."""
        failing = self._base.failing
        return None if failing is not None and failing[0] == update_id else failing

    def _save(self, **changes: Any) -> None:
        self._base = dataclasses.replace(self._base, **changes)
        self._saver.request(lambda: self.state)  # gathered when the write begins: once, not at every change

    def status(self) -> dict[str, Json]:
        """``describe`` of where this intake is."""
        return self.describe(self.state, self.last_set_aside)

    @staticmethod
    def describe(state: PollState, last_set_aside: dict[str, Json] | None = None) -> dict[str, Json]:
        """``offset``, ``setAside`` (how many so far, restarts included), ``lastSetAside`` and ``failing``."""
        failing = state.failing
        return {
            "offset": state.offset,
            "setAside": state.set_aside,
            "lastSetAside": last_set_aside,
            "failing": {"updateId": failing[0], "tries": failing[1]} if failing else None,
        }
