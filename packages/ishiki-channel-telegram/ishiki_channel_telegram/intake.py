"""What a connection does with each update ``getUpdates`` returned or a webhook delivered: recognise repeats,
dispatch, retry or set aside, then confirm.

Confirmation follows the Bot API: the next ``offset`` is the id of the last update received + 1, moved once
that update is handled (durable in the host, a repeat, or set aside). Ids are not assumed to grow: after a
week without updates Telegram picks the next id at random, which may be below the offset. A repeat is told
from a new update by a bounded memory of the ids handled (``RecentIds``), not by "below the offset"; an id
below the offset that is not a recent one starts a new numbering: a reset, logged once, and the memory is
cleared.

A dispatch that fails is handled by what the host raised (``ishiki_host.errors.ChannelError``):

- ``EventRejected`` (an event the host will never take): the update is set aside at once;
- a ``ChannelError`` with ``fatal = False`` (the host cannot take input now: it is stopping, its disk is
  full): retried with back-off, not counted against the update, since every later update would fail alike;
- anything else: retried with back-off; after the account's ``update_tries`` failed tries the update is set
  aside. The count is saved with the offset (``PollState.failing``), so restarts do not reset it.

A webhook delivery (``take``) gets one try per request instead of retries with back-off: a failure answers
"not yet" and Telegram sends the update again later, with its own back-off, so a request never waits on a
sleep. The tries are counted alike (kept per update id while the connection runs, so two failing updates
that Telegram alternates are both set aside in the end); updates are taken one at a time, as polling takes
them. There is no offset: the ids of the updates handled are saved instead (``PollState.recent``), so a
redelivery after a restart is recognised.

Setting aside logs one line (update id and why), counts it (``PollState.set_aside``, shown by the
connection's ``status()``), keeps the update in ``telegram-set-aside.jsonl`` (``SetAsideFile``), and confirms
past it. A malformed update (the shaper raised ``EventInvalid``) is set aside the same way.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from ishiki_host import Backoff, RandomSource
from ishiki_host.errors import ChannelError, EventInvalid, EventRejected

from ishiki_channel_telegram.aside import SetAsideFile
from ishiki_channel_telegram.recent import RecentIds
from ishiki_channel_telegram.shaping import Shaped, Shaper, update_kind
from ishiki_channel_telegram.state import RECENT_SAVED, OffsetSaver, PollState

if TYPE_CHECKING:
    from ishiki_host import ChannelHost, Json

    from ishiki_channel_telegram.config import TelegramAccount

__all__ = ["Intake"]

_TRIES_KEPT = 256  # failing updates whose tries are counted at once (webhook mode: Telegram may give up on one)


class _SetAside(Exception):
    """The update being handled is to be set aside (``why`` says why; ``malformed``: the channel's own finding,
    logged as a warning, not the host's failure)."""

    def __init__(self, why: str, *, malformed: bool = False):
        self.why = why
        self.malformed = malformed
        super().__init__(why)


class Intake:
    """The updates of one running connection (see the module docstring).

    ``own(chat, message_id)`` tells a message the bot sent itself (never dispatched); ``state`` (and
    ``last_set_aside``) is where the last run stopped.
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
        self._one_at_a_time = anyio.Lock()
        self.state = state
        self.last_set_aside = last_set_aside

    @property
    def offset(self) -> int | None:
        """The next ``offset`` to ask ``getUpdates`` for (``None``: whatever Telegram holds)."""
        return self.state.offset

    async def handle(self, updates: list[Any], shaper: Shaper) -> bool:
        """Handle then confirm each update in order; False when the batch held nothing to confirm."""
        progressed = not updates
        for update in updates:
            update_id = self._update_id(update)
            if update_id is None:
                continue
            if not self._is_repeat(update_id):
                self._note_numbering(update_id)
                await self._take(update, update_id, shaper, retry=True)
                self._recent.add(update_id)
            self._tries.pop(update_id, None)
            self._save(offset=update_id + 1, failing=None, recent=())
            progressed = True
        return progressed

    async def take(self, update: Any, shaper: Shaper) -> bool:
        """Handle one update a webhook delivered, with one try (see the module docstring): True once it is
        handled (durable, a repeat, set aside, ignored), False when Telegram should send it again."""
        update_id = self._update_id(update)
        if update_id is None:
            return True  # nothing could ever be done with it: confirm it
        async with self._one_at_a_time:
            if self._is_repeat(update_id):
                return True
            if not await self._take(update, update_id, shaper, retry=False):
                return False
            self._recent.add(update_id)
            self._tries.pop(update_id, None)
            recent = (*self.state.recent[-(RECENT_SAVED - 1) :], update_id)
            self._save(offset=None, failing=self._failing_but(update_id), recent=recent)
            return True

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
        offset = self.state.offset
        if offset is not None and update_id < offset:
            self._log.warning(
                "telegram account %s: update ids went backwards (update %d, after %d): Telegram renumbers "
                "updates after a long pause; following the new numbering",
                self._account.label,
                update_id,
                offset - 1,
            )
            self._recent.clear()

    async def _take(self, update: dict[str, Any], update_id: int, shaper: Shaper, *, retry: bool) -> bool:
        """Dispatch the update's events; False when a try failed and ``retry`` is off (it is to come again)."""
        try:
            for shaped in self._shape(shaper, update, update_id):
                if not await self._dispatch(shaped, update_id, retry=retry):
                    return False
        except _SetAside as aside:
            await self._set_aside(update, update_id, aside)
        return True

    def _shape(self, shaper: Shaper, update: dict[str, Any], update_id: int) -> list[Shaped]:
        if update_kind(update) is None:
            kinds = sorted(key for key in update if key != "update_id")
            self._log.debug("telegram: ignored update %d of kind %s", update_id, ", ".join(kinds) or "(none)")
            return []
        try:
            shaped = shaper.shape(update, self._host.clock.now())
        except EventInvalid as exc:
            raise _SetAside(str(exc), malformed=True) from None
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
        self._save(failing=self._failing_but(update_id), set_aside=self.state.set_aside + 1)
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
        failing = self.state.failing
        return None if failing is not None and failing[0] == update_id else failing

    def _save(self, **changes: Any) -> None:
        self.state = dataclasses.replace(self.state, **changes)
        self._saver.request(self.state)

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
