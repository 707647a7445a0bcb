"""Sending: text split at Telegram's limit and rendered as HTML, typing indicators, photos and documents.

A text is rendered from Markdown and cut into parts of at most 4,096 UTF-16 units of shown text
(``render.render_parts``: Telegram counts the text after its markup is parsed; a code block or a bold span is
never cut when it fits one part, and a longer one is closed and reopened). Each part goes out as HTML; when
Telegram answers ``can't parse entities`` that part is sent again as the plain text it shows. With
``parse_mode: plain`` the text is split as written (``split_message``) and sent without markup. The
first part replies to ``reply_to`` (``allow_sending_without_reply``: a deleted target does not lose the reply).

Retries never risk a duplicate message: a 429 is waited out (``retry_after``, up to a minute) and a request
that certainly never left (no connection) is retried; any other failure ends the send with ``SendResult.error``
naming the part, and the ids of the parts that did go out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ishiki_host import SendResult, parse_channel_id, split_message, utf16_len
from ishiki_host.errors import EventInvalid

from ishiki_channel_telegram.errors import (
    TelegramBadRequest,
    TelegramError,
    TelegramRateLimited,
    TelegramUnavailable,
)
from ishiki_channel_telegram.render import RenderedPart, render_parts

if TYPE_CHECKING:
    import logging
    from collections.abc import Awaitable

    from ishiki_host import Clock, OutboundFile

    from ishiki_channel_telegram.api import BotAPI

__all__ = ["CAPTION_LIMIT", "MESSAGE_LIMIT", "Sender", "chat_of", "reply_id"]

MESSAGE_LIMIT = 4096
CAPTION_LIMIT = 1024
PHOTO_LIMIT = 10 * 1024 * 1024
UPLOAD_LIMIT = 50 * 1024 * 1024
MAX_RATE_WAIT = 60.0
_ATTEMPTS = 3
_PHOTO_TYPES = frozenset({"image/jpeg", "image/png", "image/webp"})
T = TypeVar("T")


def chat_of(channel_id: str) -> int:
    """The Telegram chat id of ``private:<id>`` / ``group:<id>``; ``EventInvalid`` when it is not one."""
    _, rest = parse_channel_id(channel_id)
    try:
        return int(rest)
    except ValueError:
        raise EventInvalid(f"{channel_id!r} is not a Telegram chat (the id after the kind must be a number)") from None


class Sender:
    """The outbound half of a connection. ``on_sent(chat_id, message_id)`` is told of every message sent."""

    def __init__(
        self,
        api: BotAPI,
        *,
        clock: Clock,
        logger: logging.Logger,
        parse_mode: str = "html",
        on_sent: Callable[[int, int], None] = lambda chat, message: None,
    ):
        self._api = api
        self._clock = clock
        self._logger = logger
        self._html = parse_mode == "html"
        self._on_sent = on_sent

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Send ``text`` as one or more messages (see the module docstring)."""
        try:
            chat = chat_of(channel_id)
            reply = reply_id(reply_to)
        except EventInvalid as exc:
            return SendResult(error=str(exc))
        parts = self.parts(text)
        if not parts:
            return SendResult(error="nothing to send: the text is empty")
        return await self.send_parts(chat, parts, reply)

    def parts(self, text: str, limit: int = MESSAGE_LIMIT) -> list[RenderedPart]:
        """``text`` as the messages it is sent as: rendered (``render_parts``), or split as written when the
        account's ``parse_mode`` is ``plain``."""
        if self._html:
            return render_parts(text, limit)
        return [RenderedPart(part, part) for part in split_message(text, limit, measure=utf16_len)]

    async def call(self, method: str, params: dict[str, Any], *, idempotent: bool = False) -> Any:
        """Call ``method``, waiting out 429s and retrying a request that never left (any network failure when
        the call is ``idempotent``: repeating it changes nothing)."""
        return await self._retrying(lambda: self._api.call(method, params), idempotent=idempotent)

    async def formatted(self, method: str, params: dict[str, Any], part: RenderedPart, *, edit: bool = False) -> Any:
        """Call ``method`` with ``part`` as its ``text`` (HTML, or plain when Telegram refuses the markup or the
        account sends plain text), waiting out 429s; ``edit``: the call changes nothing when repeated, so it is
        retried after any network failure, not only one that certainly never left."""
        if self._html:
            try:
                return await self.call(method, {**params, "text": part.html, "parse_mode": "HTML"}, idempotent=edit)
            except TelegramBadRequest as exc:
                if not exc.cannot_parse_entities:
                    raise
                self._logger.warning("Telegram refused the HTML of %s (%s); sending it as plain text", method, exc)
        return await self.call(method, {**params, "text": part.plain}, idempotent=edit)

    async def send_parts(
        self, chat: int, parts: Sequence[RenderedPart], reply: int | None, *, before: Sequence[str] = ()
    ) -> SendResult:
        """Send ``parts`` in order (the first replies to ``reply``); ``before`` are ids already delivered of
        the same message (a draft finished in place), counted in the result and its error."""
        ids: list[str] = list(before)
        total = len(parts) + len(before)
        for index, part in enumerate(parts):
            try:
                message = await self._send_part(chat, part, reply if index == 0 else None)
            except TelegramError as exc:
                where = f"part {len(before) + index + 1} of {total}" if total > 1 else "the message"
                return SendResult(ids=tuple(ids), error=f"{where} was not sent: {exc.description}")
            ids.append(str(message["message_id"]))
        return SendResult(ids=tuple(ids))

    async def send_typing(self, channel_id: str) -> None:
        """``sendChatAction typing``; a failure is logged, never raised (the indicator is only a courtesy)."""
        try:
            params = {"chat_id": chat_of(channel_id), "action": "typing"}
            await self._retrying(lambda: self._api.call("sendChatAction", params))
        except (TelegramError, EventInvalid) as exc:
            self._logger.debug("typing indicator in %s failed: %s", channel_id, exc)

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Send each file as a photo (JPEG/PNG/WebP up to 10 MiB) or a document; captions over 1,024 units
        follow as a message of their own."""
        try:
            chat = chat_of(channel_id)
        except EventInvalid as exc:
            return SendResult(error=str(exc))
        ids: list[str] = []
        for index, file in enumerate(files):
            name = file.blob.name or f"file {index + 1}"
            try:
                ids.extend(await self._send_file(chat, channel_id, file))
            except TelegramError as exc:
                return SendResult(ids=tuple(ids), error=f"{name} was not sent: {exc.description}")
        return SendResult(ids=tuple(ids))

    async def _send_part(self, chat: int, part: RenderedPart, reply_to: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {"chat_id": chat}
        if reply_to is not None:
            params["reply_parameters"] = {"message_id": reply_to, "allow_sending_without_reply": True}
        message = await self.formatted("sendMessage", params, part)
        if not isinstance(message, dict) or not isinstance(message.get("message_id"), int):
            raise TelegramBadRequest("sendMessage answered without a message id", method="sendMessage")
        self._on_sent(chat, message["message_id"])
        return message

    async def _send_file(self, chat: int, channel_id: str, file: OutboundFile) -> list[str]:
        blob = file.blob
        if len(blob.data) > UPLOAD_LIMIT:
            too_big = f"{len(blob.data)} bytes is over Telegram's 50 MB upload limit"
            raise TelegramBadRequest(too_big, method="sendDocument")
        caption = file.caption if file.caption and utf16_len(file.caption) <= CAPTION_LIMIT else None
        params: dict[str, Any] = {"chat_id": chat, "caption": caption}
        upload = (blob.name or "file", blob.data, blob.media_type)
        message: dict[str, Any] | None = None
        if _as_photo(file):
            try:
                message = await self._sent(chat, params, "sendPhoto", {"photo": upload})
            except TelegramBadRequest as exc:  # dimensions or format Telegram will not show as a photo
                self._logger.info("sendPhoto refused %s (%s); sending it as a document", blob.name, exc.description)
        if message is None:
            message = await self._sent(chat, params, "sendDocument", {"document": upload})
        ids = [str(message["message_id"])]
        if file.caption and caption is None:
            result = await self.send(channel_id, file.caption)
            if not result.ok:
                raise TelegramBadRequest(f"the caption was not sent: {result.error}", method="sendMessage")
            ids.extend(result.ids)
        return ids

    async def _sent(
        self, chat: int, params: dict[str, Any], method: str = "sendMessage", files: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        message = await self._retrying(lambda: self._api.call(method, params, files=files))
        if not isinstance(message, dict) or not isinstance(message.get("message_id"), int):
            raise TelegramBadRequest(f"{method} answered without a message id", method=method)
        self._on_sent(chat, message["message_id"])
        return message

    async def _retrying(self, attempt: Callable[[], Awaitable[T]], *, idempotent: bool = False) -> T:
        for tries in range(1, _ATTEMPTS + 1):
            try:
                return await attempt()
            except TelegramRateLimited as exc:
                if tries == _ATTEMPTS or exc.retry_after > MAX_RATE_WAIT:
                    raise
                await self._clock.sleep(exc.retry_after)
            except TelegramUnavailable as exc:
                if tries == _ATTEMPTS or (exc.sent and not idempotent):
                    raise
                await self._clock.sleep(float(tries))
        raise AssertionError("unreachable: the last attempt returns or raises")


def reply_id(reply_to: str | None) -> int | None:
    """The message id ``reply_to`` names (``None`` for none); ``EventInvalid`` when it is not a number."""
    if reply_to is None:
        return None
    try:
        return int(reply_to)
    except ValueError:
        raise EventInvalid(f"reply_to {reply_to!r} is not a Telegram message id (a number)") from None


def _as_photo(file: OutboundFile) -> bool:
    wanted = file.extra.get("send_as")
    if wanted in ("photo", "document"):
        return wanted == "photo"
    return file.blob.media_type in _PHOTO_TYPES and len(file.blob.data) <= PHOTO_LIMIT
