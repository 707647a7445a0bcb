"""A reply shown while the model writes it: a draft bubble, or one message edited as the text grows.

The host calls ``show`` with everything written so far, again each time the previous call returned (texts in
between are skipped), then ``finish`` with the final text or ``drop`` (see ``ishiki_host.channels.base``).
Each ``show`` puts the newest text on screen at once, then waits out the account's ``draft_edit_seconds`` for
the chat (1 s in private chats, 3 s in groups by default; the host's clock) before it returns: that wait is
the throttle (the host cuts it short when the reply is final; the call before it is shielded), and it keeps
within Telegram's limits of about one message a second in a chat and twenty a
minute in a group. A 429 is waited out for its ``retry_after``. Only the first part of a long text is shown
while it is written (the message limit), rendered as the final reply will be.

- ``drafts: auto``, private chat: ``sendMessageDraft`` (Bot API 9.3+) shows an ephemeral bubble with a
  ``draft_id`` of its own, nothing is stored; ``finish`` sends the final text once with ``sendMessage`` (the
  bubble gives way to it) and ``drop`` leaves the bubble to fade. When Telegram answers that the method does
  not exist (404: an older or local Bot API server) drafts are off for the account; when it refuses the chat
  (400), for that chat; either is logged once, and the reply is shown by editing instead, from that frame on.
- otherwise (groups, ``drafts: edit``, or after such a refusal): the first ``show`` sends a message (replying
  to ``reply_to``), later ones edit it with ``editMessageText`` when the shown text changed. ``finish`` edits
  it into the final text's first part and sends the other parts after it; ``drop`` deletes it when the step
  called tools, or edits it to say the reply was cut off when the turn failed or was stopped. An edit is
  retried after any network failure (repeating it changes nothing); when the message is gone (deleted by
  someone) the final text is sent as new messages instead.

A frame that fails for another reason is logged at debug level and skipped: the next one, or the final text,
shows what it would have.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio
from ishiki_host import SendResult
from ishiki_host.errors import EventInvalid

from ishiki_channel_telegram.errors import (
    TelegramAuthError,
    TelegramBadRequest,
    TelegramError,
    TelegramRateLimited,
)
from ishiki_channel_telegram.outbound import MESSAGE_LIMIT, chat_of, reply_id
from ishiki_channel_telegram.render import RenderedPart

if TYPE_CHECKING:
    import logging

    from ishiki_host import Clock, Draft, DraftEnd

    from ishiki_channel_telegram.config import TelegramAccount
    from ishiki_channel_telegram.outbound import Sender

__all__ = ["CUT_OFF", "Drafter"]

CUT_OFF = {"failed": "(cut off: the reply failed)", "aborted": "(stopped)"}
"""The note a dropped draft message ends with, by why it was dropped (``tools`` deletes the message)."""

_KEPT = 256  # drafts the host never finished or dropped (a crash) are forgotten past this many


@dataclass(slots=True)
class _Shown:
    """What one draft shows in its chat."""

    chat: int
    via: Literal["bubble", "message"]
    pace: float
    draft_id: int = 0
    message_id: int | None = None
    html: str = ""
    plain: str = ""
    free_at: float = 0.0  # the monotonic time the chat may be updated again


class Drafter:
    """The drafts of one running connection (see the module docstring)."""

    def __init__(self, sender: Sender, account: TelegramAccount, *, clock: Clock, logger: logging.Logger):
        self._sender = sender
        self._account = account
        self._clock = clock
        self._log = logger
        self._shown: OrderedDict[tuple[str, str], _Shown] = OrderedDict()
        self._bubbles_refused = account.drafts != "auto"
        self._refused_chats: set[int] = set()

    @property
    def bubbles(self) -> bool:
        """Whether draft bubbles (``sendMessageDraft``) are still used for private chats on this account."""
        return not self._bubbles_refused

    async def show(self, channel_id: str, draft: Draft) -> None:
        """Show ``draft.text``, then wait until the chat may be updated again."""
        shown = self._state(channel_id, draft)
        if shown is None:
            return
        parts = self._sender.parts(draft.text)
        if not parts:
            return
        started = self._clock.monotonic()
        # The host cancels a show in progress once the reply is final: the call itself is never cut (what this
        # records as shown stays true); the wait after it is what gets cut.
        with anyio.CancelScope(shield=True):
            try:
                if shown.via == "bubble":
                    await self._bubble(shown, parts[0])
                if shown.via == "message":
                    await self._message(shown, parts[0], draft.reply_to)
            except TelegramRateLimited as exc:
                self._log.debug("telegram account %s: a draft frame was rate limited: %s", self._account.label, exc)
                shown.free_at = self._clock.monotonic() + exc.retry_after
            except TelegramError as exc:
                self._log.debug("telegram account %s: a draft frame failed: %s", self._account.label, exc)
        shown.free_at = max(shown.free_at, started + shown.pace)
        await self._wait(shown)

    async def finish(self, channel_id: str, draft: Draft, text: str) -> SendResult:
        """Deliver the final ``text`` once: in place of the draft's message, or as new messages."""
        shown = self._shown.pop((channel_id, draft.id), None)
        try:
            chat, reply = chat_of(channel_id), reply_id(draft.reply_to)
        except EventInvalid as exc:
            return SendResult(error=str(exc))
        parts = self._sender.parts(text)
        if shown is None or shown.message_id is None:
            if not parts:
                return SendResult(error="nothing to send: the text is empty")
            return await self._sender.send_parts(chat, parts, reply)
        message_id = shown.message_id
        if not parts:
            await self._delete(shown)
            return SendResult(error="nothing to send: the text is empty")
        await self._wait(shown)
        try:
            await self._edit(shown, parts[0])
        except TelegramBadRequest as exc:
            if not _gone(exc):
                return SendResult(ids=(str(message_id),), error=f"the reply was not finished: {exc.description}")
            label = self._account.label
            self._log.info("telegram account %s: the draft message is gone (%s); sending the reply anew", label, exc)
            return await self._sender.send_parts(chat, parts, reply)
        except TelegramError as exc:
            return SendResult(ids=(str(message_id),), error=f"the reply was not finished: {exc.description}")
        return await self._sender.send_parts(chat, parts[1:], None, before=(str(message_id),))

    async def drop(self, channel_id: str, draft: Draft, why: DraftEnd) -> None:
        """The draft will not become a message: delete its message (``tools``) or mark it cut off."""
        shown = self._shown.pop((channel_id, draft.id), None)
        if shown is None or shown.message_id is None:
            return  # nothing shown, or a bubble: it fades by itself
        if why == "tools":
            await self._delete(shown)
            return
        note = CUT_OFF[why]
        parts = self._sender.parts(draft.text, MESSAGE_LIMIT - len(note) - 2)
        last = parts[0] if parts else None
        await self._wait(shown)
        try:
            await self._edit(shown, _with_note(last, note))
        except TelegramError as exc:
            self._log.debug("telegram account %s: the cut-off draft was not marked: %s", self._account.label, exc)

    def _state(self, channel_id: str, draft: Draft) -> _Shown | None:
        key = (channel_id, draft.id)
        shown = self._shown.get(key)
        if shown is not None:
            return shown
        try:
            chat = chat_of(channel_id)
        except EventInvalid as exc:
            self._log.debug("telegram account %s: no draft shown: %s", self._account.label, exc)
            return None
        private = channel_id.startswith("private:")
        bubble = private and not self._bubbles_refused and chat not in self._refused_chats
        draft_id = zlib.crc32(f"{channel_id}\n{draft.id}".encode()) & 0x7FFFFFFF or 1
        shown = _Shown(chat, "bubble" if bubble else "message", self._account.draft_pace(channel_id), draft_id)
        self._shown[key] = shown
        while len(self._shown) > _KEPT:
            self._shown.popitem(last=False)
        return shown

    async def _bubble(self, shown: _Shown, part: RenderedPart) -> None:
        if part.html == shown.html:
            return
        params = {"chat_id": shown.chat, "draft_id": shown.draft_id}
        try:
            await self._sender.formatted("sendMessageDraft", params, part)
        except (TelegramAuthError, TelegramBadRequest) as exc:
            self._refused(shown.chat, exc)
            shown.via = "message"
            return
        shown.html, shown.plain = part.html, part.plain

    async def _message(self, shown: _Shown, part: RenderedPart, reply_to: str | None) -> None:
        if shown.message_id is None:
            result = await self._sender.send_parts(shown.chat, [part], reply_id(reply_to))
            if not result.ok:
                raise TelegramError(result.error or "the draft message was not sent", method="sendMessage")
            shown.message_id = int(result.ids[0])
            shown.html, shown.plain = part.html, part.plain
            return
        await self._edit(shown, part)

    async def _edit(self, shown: _Shown, part: RenderedPart) -> None:
        if part.html == shown.html:
            return
        params: dict[str, Any] = {"chat_id": shown.chat, "message_id": shown.message_id}
        try:
            await self._sender.formatted("editMessageText", params, part, edit=True)
        except TelegramBadRequest as exc:
            if "not modified" not in exc.description.lower():
                raise
        shown.html, shown.plain = part.html, part.plain

    async def _delete(self, shown: _Shown) -> None:
        await self._wait(shown)
        try:
            params = {"chat_id": shown.chat, "message_id": shown.message_id}
            await self._sender.call("deleteMessage", params, idempotent=True)
        except TelegramError as exc:
            self._log.debug("telegram account %s: the draft message was not deleted: %s", self._account.label, exc)

    async def _wait(self, shown: _Shown) -> None:
        delay = shown.free_at - self._clock.monotonic()
        if delay > 0:
            await self._clock.sleep(delay)

    def _refused(self, chat: int, exc: TelegramError) -> None:
        label = self._account.label
        if isinstance(exc, TelegramAuthError):  # 404: this Bot API server has no such method
            if not self._bubbles_refused:
                self._log.warning(
                    "telegram account %s: the Bot API at %s has no sendMessageDraft (%s); replies being written "
                    "are shown by editing a message",
                    label,
                    self._account.api_base,
                    exc.description,
                )
            self._bubbles_refused = True
        elif chat not in self._refused_chats:
            self._log.info(
                "telegram account %s: Telegram refused a draft in chat %s (%s); replies being written there are "
                "shown by editing a message",
                label,
                chat,
                exc.description,
            )
            self._refused_chats.add(chat)


def _gone(exc: TelegramBadRequest) -> bool:
    words = exc.description.lower()
    return "message to edit not found" in words or "message can't be edited" in words


def _with_note(part: RenderedPart | None, note: str) -> RenderedPart:
    if part is None:
        return RenderedPart(f"<i>{note}</i>", note)
    return RenderedPart(f"{part.html}\n\n<i>{note}</i>", f"{part.plain}\n\n{note}")
