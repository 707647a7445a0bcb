"""Sending through the Graph API: text split at WhatsApp's limit, read receipts with the typing indicator, and
images and documents uploaded then sent by media id.

A text is rendered from Markdown to WhatsApp's marks (``*bold*``, lists, code blocks: ``formatting``) and cut
into parts of 4,096 UTF-16 units, marks included: Meta says "4,096 characters" without saying which; UTF-16
units are the stricter count (an emoji is two), so every part fits either way. The first
part replies to ``reply_to`` (``context.message_id``). Each call is retried with back-off (the host's clock,
the account's random source) through rate limits (130429, 131056...), 5xx and cut connections, at most
``send_tries`` times; a cut after Meta took the request may then deliver a part twice, which is rarer and
kinder than losing it.
Errors that retrying cannot help end the send with ``SendResult.error`` naming the part, and the ids of the
parts that did go out:

- 131047 (the 24-hour customer-service window is closed) is logged for the operator; with
  ``template_on_window_closed`` that template is sent instead, once per chat until the person writes again;
- 190 (the token expired or was revoked) is also told to ``on_auth_error``: the connection stops with it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ishiki_host import Backoff, SendResult, parse_channel_id, utf16_len
from ishiki_host.errors import EventInvalid

from ishiki_channel_whatsapp.errors import (
    WhatsAppAuthError,
    WhatsAppBadRequest,
    WhatsAppError,
    WhatsAppRateLimited,
    WhatsAppUnavailable,
    WhatsAppWindowClosed,
)
from ishiki_channel_whatsapp.formatting import render_parts

if TYPE_CHECKING:
    import logging

    from ishiki_host import Clock, OutboundFile, RandomSource

    from ishiki_channel_whatsapp.cloud.graph import GraphAPI
    from ishiki_channel_whatsapp.config import CloudAccount

__all__ = ["CAPTION_LIMIT", "DOCUMENT_LIMIT", "IMAGE_LIMIT", "MESSAGE_LIMIT", "Sender", "recipient_of"]

MESSAGE_LIMIT = 4096
CAPTION_LIMIT = 1024
IMAGE_LIMIT = 5 * 1024 * 1024
DOCUMENT_LIMIT = 100 * 1024 * 1024
TYPING_EVERY = 20.0
"""Seconds between two typing indicators for the same message (WhatsApp shows one for up to 25 s)."""
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png"})
T = TypeVar("T")


def recipient_of(channel_id: str) -> dict[str, str]:
    """``{"recipient_type", "to"}`` of ``private:<wa_id>`` or ``group:<id>``; ``EventInvalid`` otherwise."""
    kind, rest = parse_channel_id(channel_id)
    if kind == "private" and not rest.isdigit():
        raise EventInvalid(f"{channel_id!r} is not a WhatsApp chat (private:<wa_id>, the digits of a number)")
    return {"recipient_type": "individual" if kind == "private" else "group", "to": rest}


class Sender:
    """The outbound half of a cloud connection (see the module docstring).

    ``on_sent(wamid)`` is told of every message sent, ``on_failed()`` of every send that ended with an error;
    ``last_inbound(channel_id)`` gives the chat's newest message id (for read receipts).
    """

    def __init__(
        self,
        api: GraphAPI,
        account: CloudAccount,
        *,
        clock: Clock,
        rng: RandomSource,
        logger: logging.Logger,
        on_sent: Callable[[str], None] = lambda wamid: None,
        on_auth_error: Callable[[WhatsAppAuthError], None] = lambda exc: None,
        last_inbound: Callable[[str], str | None] = lambda channel: None,
        on_failed: Callable[[], None] = lambda: None,
    ):
        self._api = api
        self._account = account
        self._clock = clock
        self._rng = rng
        self._log = logger
        self._on_sent = on_sent
        self._on_auth_error = on_auth_error
        self._last_inbound = last_inbound
        self._on_failed = on_failed
        self._messages = f"{account.phone_number_id}/messages"
        self._typing: dict[str, tuple[str, float]] = {}
        self._templated: set[str] = set()

    def reopened(self, channel_id: str) -> None:
        """The person wrote: their window is open again, and a later refusal may send the template again."""
        self._templated.discard(channel_id)

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Send ``text`` as one or more messages (see the module docstring)."""
        try:
            recipient = recipient_of(channel_id)
        except EventInvalid as exc:
            return self._failed(SendResult(error=str(exc)))
        parts = render_parts(text, MESSAGE_LIMIT, utf16_len)
        if not parts:
            return self._failed(SendResult(error="nothing to send: the text is empty"))
        ids: list[str] = []
        for index, part in enumerate(parts):
            body: dict[str, Any] = {**recipient, "type": "text", "text": {"body": part, "preview_url": False}}
            if index == 0 and reply_to:
                body["context"] = {"message_id": reply_to}
            try:
                ids.append(await self._message(body, "send message"))
            except WhatsAppError as exc:
                where = f"part {index + 1} of {len(parts)}" if len(parts) > 1 else "the message"
                return await self._refused(channel_id, recipient, ids, where, exc)
        return SendResult(ids=tuple(ids))

    async def send_typing(self, channel_id: str) -> None:
        """Mark the chat's newest message read with the typing indicator (``mark_read``); once per
        ``TYPING_EVERY`` seconds for the same message. A failure is logged, never raised."""
        message_id = self._last_inbound(channel_id)
        if not self._account.mark_read or message_id is None:
            return
        now = self._clock.monotonic()
        shown = self._typing.get(channel_id)
        if shown is not None and shown[0] == message_id and now - shown[1] < TYPING_EVERY:
            return
        self._typing[channel_id] = (message_id, now)
        body = {"status": "read", "message_id": message_id, "typing_indicator": {"type": "text"}}
        try:
            await self._api.post(self._messages, {"messaging_product": "whatsapp", **body}, what="mark read")
        except WhatsAppAuthError as exc:
            self._on_auth_error(exc)
        except WhatsAppError as exc:
            self._log.debug("whatsapp account %s: the typing indicator failed: %s", self._account.label, exc)

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Send each file as an image (JPEG/PNG up to 5 MB) or a document (up to 100 MB); a caption over 1,024
        characters follows as a message of its own."""
        try:
            recipient = recipient_of(channel_id)
        except EventInvalid as exc:
            return self._failed(SendResult(error=str(exc)))
        ids: list[str] = []
        for index, file in enumerate(files):
            name = file.blob.name or f"file {index + 1}"
            try:
                ids.extend(await self._send_file(channel_id, recipient, file))
            except WhatsAppError as exc:
                return await self._refused(channel_id, recipient, ids, name, exc)
        return SendResult(ids=tuple(ids))

    async def _send_file(self, channel_id: str, recipient: dict[str, str], file: OutboundFile) -> list[str]:
        blob = file.blob
        kind = _kind(file)
        limit = IMAGE_LIMIT if kind == "image" else DOCUMENT_LIMIT
        if len(blob.data) > limit:
            raise WhatsAppBadRequest(f"{len(blob.data)} bytes is over WhatsApp's {limit // 2**20} MB {kind} limit")
        name = blob.name or ("image" if kind == "image" else "file")
        fields = {"messaging_product": "whatsapp", "type": blob.media_type}
        uploaded = await self._retrying(
            lambda: self._api.upload(
                f"{self._account.phone_number_id}/media",
                fields,
                (name, blob.data, blob.media_type),
                what="upload media",
            )
        )
        media_id = uploaded.get("id")
        if not isinstance(media_id, str) or not media_id:
            raise WhatsAppBadRequest("upload media answered without a media id", what="upload media")
        caption = file.caption if file.caption and utf16_len(file.caption) <= CAPTION_LIMIT else None
        media: dict[str, Any] = {"id": media_id}
        if caption:
            media["caption"] = caption
        if kind == "document":
            media["filename"] = name
        ids = [await self._message({**recipient, "type": kind, kind: media}, f"send {kind}")]
        if file.caption and caption is None:
            result = await self.send(channel_id, file.caption)
            ids.extend(result.ids)
            if not result.ok:
                raise WhatsAppBadRequest(f"the caption was not sent: {result.error}", what="send message")
        return ids

    async def _message(self, body: dict[str, Any], what: str) -> str:
        """Post one message; its wamid."""
        answer = await self._retrying(
            lambda: self._api.post(self._messages, {"messaging_product": "whatsapp", **body}, what=what)
        )
        messages = answer.get("messages")
        wamid = (
            messages[0].get("id") if isinstance(messages, list) and messages and isinstance(messages[0], dict) else None
        )
        if not isinstance(wamid, str) or not wamid:
            raise WhatsAppBadRequest(f"{what} answered without a message id", what=what)
        self._on_sent(wamid)
        return wamid

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        backoff = Backoff(self._rng, maximum=self._account.backoff_max)
        for tries in range(1, self._account.send_tries + 1):
            try:
                return await attempt()
            except WhatsAppAuthError as exc:
                self._on_auth_error(exc)
                raise
            except (WhatsAppRateLimited, WhatsAppUnavailable) as exc:
                if tries == self._account.send_tries:
                    raise
                delay = backoff.next_delay()
                self._log.warning(
                    "whatsapp account %s: %s; try %d of %d again in %.1f s",
                    self._account.label,
                    exc,
                    tries + 1,
                    self._account.send_tries,
                    delay,
                )
                await self._clock.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _refused(
        self, channel_id: str, recipient: dict[str, str], ids: list[str], where: str, exc: WhatsAppError
    ) -> SendResult:
        if not isinstance(exc, WhatsAppWindowClosed):
            return self._failed(SendResult(ids=tuple(ids), error=f"{where} was not sent: {exc.details}"))
        self._log.warning(
            "whatsapp account %s: a reply to %s was refused (131047): more than 24 hours passed since they last "
            "wrote, so WhatsApp delivers only templates until they write again%s",
            self._account.label,
            recipient["to"],
            "" if self._account.template_on_window_closed else " (set template_on_window_closed to send one)",
        )
        error = (
            f"{where} was not sent: WhatsApp delivers no free-form message until this person writes again "
            "(more than 24 hours since their last message)"
        )
        sent = await self._template(channel_id, recipient)
        if sent is not None:
            name, wamid = sent
            ids.append(wamid)
            error += f"; the template {name!r} was sent instead"
        return self._failed(SendResult(ids=tuple(ids), error=error))

    async def _template(self, channel_id: str, recipient: dict[str, str]) -> tuple[str, str] | None:
        """Send the account's template, once per chat until the person writes again: its name and wamid."""
        template = self._account.template_on_window_closed
        if template is None or channel_id in self._templated:
            return None
        self._templated.add(channel_id)
        body = {
            **recipient,
            "type": "template",
            "template": {"name": template.name, "language": {"code": template.language}},
        }
        try:
            return template.name, await self._message(body, "send template")
        except WhatsAppError as exc:
            self._log.error(
                "whatsapp account %s: the template %r was not sent either: %s", self._account.label, template.name, exc
            )
            return None

    def _failed(self, result: SendResult) -> SendResult:
        self._on_failed()
        return result


def _kind(file: OutboundFile) -> str:
    wanted = file.extra.get("send_as")
    if wanted in ("image", "photo", "document"):
        return "document" if wanted == "document" else "image"
    return "image" if file.blob.media_type in _IMAGE_TYPES and len(file.blob.data) <= IMAGE_LIMIT else "document"
