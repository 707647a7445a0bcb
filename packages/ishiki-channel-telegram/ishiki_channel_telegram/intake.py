"""What a connection does with each update ``getUpdates`` returned: recognise repeats, dispatch, retry or set
aside, then confirm.

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

Setting aside logs one line (update id and why), counts it (``PollState.set_aside``, shown by the
connection's ``status()``), keeps the update in ``telegram-set-aside.jsonl`` (``SetAsideFile``), and confirms
past it. A malformed update (the shaper raised ``EventInvalid``) is set aside the same way.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ishiki_host.errors import ChannelError, EventInvalid, EventRejected

from ishiki_channel_telegram.aside import SetAsideFile
from ishiki_channel_telegram.backoff import Backoff, RandomSource
from ishiki_channel_telegram.recent import RecentIds
from ishiki_channel_telegram.shaping import Shaped, Shaper, update_kind
from ishiki_channel_telegram.state import OffsetSaver, PollState

if TYPE_CHECKING:
    from ishiki_host import ChannelHost, Json

    from ishiki_channel_telegram.config import TelegramAccount

__all__ = ["Intake"]


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
            update_id = update.get("update_id") if isinstance(update, dict) else None
            if not isinstance(update_id, int) or isinstance(update_id, bool):
                self._log.warning("telegram account %s: skipped an update without an update_id", self._account.label)
                continue
            if update_id in self._recent:
                self._log.debug("telegram: update %d came again; confirmed without a second dispatch", update_id)
            else:
                self._note_numbering(update_id)
                await self._take(update, update_id, shaper)
                self._recent.add(update_id)
            self._save(offset=update_id + 1, failing=None)
            progressed = True
        return progressed

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

    async def _take(self, update: dict[str, Any], update_id: int, shaper: Shaper) -> None:
        try:
            for shaped in self._shape(shaper, update, update_id):
                await self._dispatch(shaped, update_id)
        except _SetAside as aside:
            await self._set_aside(update, update_id, aside)

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

    async def _dispatch(self, shaped: Shaped, update_id: int) -> None:
        backoff = Backoff(self._rng, maximum=self._account.backoff_max)
        while True:
            try:
                await self._host.dispatch(shaped.event, shaped.attachments)
                return
            except EventRejected as exc:
                raise _SetAside(f"the host rejected it ({exc})") from None
            except Exception as exc:
                await self._failed(exc, update_id, backoff.next_delay())

    async def _failed(self, exc: Exception, update_id: int, delay: float) -> None:
        """Count a failed try (unless the host called it passing), set aside after the last, else wait."""
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ChannelError) and not exc.fatal:
            tries = "the host cannot take input for now"
        else:
            failing = self.state.failing
            count = (failing[1] if failing is not None and failing[0] == update_id else 0) + 1
            self._save(failing=(update_id, count))
            if count >= self._account.update_tries:
                raise _SetAside(f"{count} tries failed, the last with {error}") from None
            tries = f"try {count} of {self._account.update_tries}"
        label = self._account.label
        self._log.error(
            "telegram account %s: dispatching update %d failed (%s), %s; retrying in %.1f s",
            label,
            update_id,
            error,
            tries,
            delay,
        )
        await self._host.clock.sleep(delay)

    async def _set_aside(self, update: dict[str, Any], update_id: int, aside: _SetAside) -> None:
        what = "malformed update" if aside.malformed else "update"
        self._save(failing=None, set_aside=self.state.set_aside + 1)
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
