"""A loopback fake of the Telegram Bot API over real HTTP, for tests and benchmarks.

``async with FakeBotAPI() as server:`` serves ``server.url`` (127.0.0.1, an ephemeral port) in the running
event loop. It implements ``getMe``, ``getUpdates`` with long-poll semantics (an answer at once when updates
are queued, else a wait of up to ``timeout`` that ends as soon as one is pushed; a newer poll ends an older
one with 409, as Telegram does), ``sendMessage`` with the real limits and error wording (4,096 UTF-16 units
after HTML parsing, ``can't parse entities``, ``message is too long``, ``message to be replied not found``,
``chat not found``), ``sendChatAction``, ``getFile`` and the file URL (20 MB limit), ``sendPhoto`` and
``sendDocument`` (multipart), ``deleteWebhook``.

Faults: a wrong token gets 401 (404 when it is not even shaped like one); ``webhook_url`` set makes
``getUpdates`` answer 409; ``fail(method, Fault...)`` queues errors, 429s with ``retry_after`` and dropped
connections; ``offline = True`` drops every request, the long poll in progress too.

Records: every call (``calls``), every message sent (``sent``), every typing action (``actions``), every
download (``downloads``); ``errors`` lists the fake's own crashes. Waits inside tests go through
``until(predicate)``, which wakes on every change, never on a timer.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

import anyio
from ishiki_host.channels.split import utf16_len

from ishiki_channel_telegram.testing._html import HtmlRejected, parse_html
from ishiki_channel_telegram.testing._http import Reply, Request, serve_http
from ishiki_channel_telegram.testing._inbound import Inbound
from ishiki_channel_telegram.testing.builders import Call, Fault, SentMessage

if TYPE_CHECKING:
    import contextlib
    from types import TracebackType

    from ishiki_host.core.clock import Clock

__all__ = ["DEFAULT_TOKEN", "FakeBotAPI"]

DEFAULT_TOKEN = "7000000001:AAFakeTokenForTheLoopbackBotAPI_0123456"
GETFILE_LIMIT = 20 * 1024 * 1024
_DEFAULT_KINDS = frozenset(
    [
        "message",
        "edited_message",
        "channel_post",
        "edited_channel_post",
        "business_connection",
        "business_message",
        "edited_business_message",
        "deleted_business_messages",
        "inline_query",
        "chosen_inline_result",
        "callback_query",
        "shipping_query",
        "pre_checkout_query",
        "poll",
        "poll_answer",
        "my_chat_member",
        "chat_join_request",
        "chat_boost",
        "removed_chat_boost",
    ]
)
_ACTIONS = frozenset(
    [
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    ]
)
_WEBHOOK_CONFLICT = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
)
_JSON_FIELDS = ("allowed_updates", "reply_parameters", "entities", "caption_entities", "link_preview_options")
_INT_FIELDS = ("offset", "limit", "timeout", "chat_id", "reply_to_message_id")


class _ApiError(Exception):
    def __init__(self, status: int, description: str):
        self.status, self.description = status, description


class _Dropped(Exception):
    """The connection is to be closed without an answer."""


class _Waiter:
    def __init__(self, offset: int | None):
        self.offset = offset
        self.event = anyio.Event()
        self.superseded = False
        self.dropped = False


class FakeBotAPI(Inbound):
    """The fake server (see the module docstring). ``clock`` dates messages (default: the system clock)."""

    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        username: str = "IshikiTestBot",
        first_name: str = "Ishiki",
        first_update_id: int = 500_000,
        clock: Clock | None = None,
    ):
        super().__init__(first_update_id=first_update_id, now=clock.now if clock else time.time, on_push=self._pushed)
        self.token = token
        self.bot: dict[str, Any] = {"id": int(token.split(":")[0]), "is_bot": True, "first_name": first_name}
        self.bot.update(username=username, can_join_groups=True, can_read_all_group_messages=False)
        self.calls: list[Call] = []
        self.sent: list[SentMessage] = []
        self.actions: list[tuple[int, str]] = []
        self.downloads: list[str] = []
        self.errors: list[str] = []
        self.blocked_chats: set[int] = set()
        self.webhook_url: str | None = None
        self._offline = False
        self.confirmed = 0
        self.port = 0
        self._allowed: frozenset[str] = _DEFAULT_KINDS
        self._faults: dict[str, collections.deque[Fault | None]] = collections.defaultdict(collections.deque)
        self._waiter: _Waiter | None = None
        self._changed: anyio.Event | None = None
        self._serving: contextlib.AbstractAsyncContextManager[int] | None = None
        self._methods: dict[str, Callable[[Request], Any]] = {
            "getMe": lambda request: self.bot,
            "getUpdates": self._get_updates,
            "sendMessage": self._send_message,
            "sendChatAction": self._send_chat_action,
            "getFile": self._get_file,
            "sendPhoto": lambda request: self._send_file(request, "photo"),
            "sendDocument": lambda request: self._send_file(request, "document"),
            "deleteWebhook": self._delete_webhook,
        }

    @property
    def url(self) -> str:
        """The base URL to give a client as ``api_base``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def offline(self) -> bool:
        """While True, every request is dropped without an answer (setting it cuts the waiting long poll)."""
        return self._offline

    @offline.setter
    def offline(self, value: bool) -> None:
        self._offline = value
        if value and self._waiter is not None:
            self._waiter.dropped = True
            self._waiter.event.set()

    @property
    def polling(self) -> bool:
        """A long poll is waiting for updates right now."""
        return self._waiter is not None

    @property
    def polling_offset(self) -> int | None:
        """The ``offset`` of the long poll waiting right now (``None``: nobody waits)."""
        return self._waiter.offset if self._waiter is not None else None

    @property
    def pending(self) -> list[dict[str, Any]]:
        """Updates not yet confirmed by an ``offset`` past them."""
        return list(self.updates)

    def count(self, method: str) -> int:
        """How many requests of ``method`` arrived."""
        return sum(1 for call in self.calls if call.method == method)

    def fail(self, method: str, *faults: Fault, skip: int = 0) -> None:
        """Answer the next requests of ``method`` with ``faults``, in order, after ``skip`` normal answers."""
        self._faults[method].extend([None] * skip + list(faults))

    async def until(self, predicate: Callable[[], bool], *, deadline: float = 10.0) -> None:
        """Return once ``predicate()`` holds; checked after every request and push (``deadline``: a safety net)."""
        with anyio.fail_after(deadline):
            while not predicate():
                assert self._changed is not None, "the server is not running"
                await self._changed.wait()

    async def __aenter__(self) -> Self:
        self._changed = anyio.Event()
        self._serving = serve_http(self._handle, self.errors)
        self.port = await self._serving.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._serving is not None
        await self._serving.__aexit__(kind, exc, tb)

    def _pushed(self) -> None:
        if self._waiter is not None:
            self._waiter.event.set()
        self._notify()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = anyio.Event()

    async def _handle(self, request: Request) -> Reply | None:
        try:
            return await self._answer(request)
        finally:
            self._notify()

    async def _answer(self, request: Request) -> Reply | None:
        if request.path.startswith("/file/bot"):
            return None if self.offline else self._download(request.path)
        match = re.fullmatch(r"/bot([^/]*)/([A-Za-z]+)", request.path)
        if match is None:
            return None if self.offline else _error(404, "Not Found")
        token, method = match.groups()
        uploads = {name: upload.filename for name, upload in request.uploads.items()}
        if self.offline:
            self.calls.append(Call(method, dict(request.params), uploads, ok=False))
            return None
        try:
            params = _normalise(request.params)
        except _ApiError as exc:
            self.calls.append(Call(method, request.params, uploads, ok=False))
            return _error(exc.status, exc.description)
        if token != self.token:
            self.calls.append(Call(method, params, uploads, ok=False))
            return _error(401, "Unauthorized") if ":" in token else _error(404, "Not Found")
        fault = self._faults[method].popleft() if self._faults.get(method) else None
        if fault is not None:
            self.calls.append(Call(method, params, uploads, ok=False))
            return None if fault.drop else _error(fault.status, fault.description, fault.retry_after)
        handler = self._methods.get(method)
        if handler is None:
            return _error(404, "Not Found: method not found")
        request.params = params
        try:
            result = handler(request)
            if hasattr(result, "__await__"):
                result = await result
        except _Dropped:
            self.calls.append(Call(method, params, uploads, ok=False))
            return None
        except _ApiError as exc:
            self.calls.append(Call(method, params, uploads, ok=False))
            return _error(exc.status, exc.description)
        self.calls.append(Call(method, params, uploads))
        return Reply.of_json({"ok": True, "result": result})

    async def _get_updates(self, request: Request) -> list[dict[str, Any]]:
        if self.webhook_url:
            raise _ApiError(409, _WEBHOOK_CONFLICT)
        params = request.params
        offset = params.get("offset")
        if isinstance(offset, int) and offset > 0:
            while self.updates and self.updates[0]["update_id"] < offset:
                self.updates.popleft()
            self.confirmed = max(self.confirmed, offset)
        if isinstance(params.get("allowed_updates"), list):
            self._allowed = frozenset(params["allowed_updates"]) or _DEFAULT_KINDS
        limit = min(max(int(params.get("limit", 100)), 1), 100)
        if self._waiter is not None:
            self._waiter.superseded = True
            self._waiter.event.set()
        ready = self._ready(limit)
        timeout = int(params.get("timeout", 0))
        if not ready and timeout > 0:
            ready = await self._wait(offset if isinstance(offset, int) else None, timeout, limit)
        return ready

    async def _wait(self, offset: int | None, seconds: int, limit: int) -> list[dict[str, Any]]:
        waiter = self._waiter = _Waiter(offset)
        self._notify()
        try:
            with anyio.move_on_after(seconds):
                await waiter.event.wait()
        finally:
            if self._waiter is waiter:
                self._waiter = None
        if waiter.dropped:
            raise _Dropped
        if waiter.superseded:
            raise _ApiError(409, Fault.conflict().description)
        return self._ready(limit)

    def _ready(self, limit: int) -> list[dict[str, Any]]:
        allowed = (u for u in self.updates if next((k for k in u if k != "update_id"), "") in self._allowed)
        return list(itertools.islice(allowed, limit))

    def _chat(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id = params.get("chat_id")
        if not isinstance(chat_id, int) or chat_id not in self.chats:
            raise _ApiError(400, "Bad Request: chat not found")
        if chat_id in self.blocked_chats:
            raise _ApiError(403, "Forbidden: bot was blocked by the user")
        return self.chats[chat_id]

    def _formatted(self, source: str, parse_mode: Any, limit: int, too_long: str) -> tuple[str, list[dict[str, Any]]]:
        text, entities = source, list[dict[str, Any]]()
        if parse_mode is not None:
            if str(parse_mode).lower() != "html":
                raise _ApiError(400, f"Bad Request: unsupported parse_mode {parse_mode!r} in the fake")
            try:
                text, entities = parse_html(source)
            except HtmlRejected as exc:
                raise _ApiError(400, f"Bad Request: can't parse entities: {exc}") from None
        if utf16_len(text) > limit:
            raise _ApiError(400, too_long)
        return text, entities

    def _reply_target(self, chat_id: int, params: dict[str, Any]) -> int | None:
        reply = params.get("reply_parameters")
        target = reply.get("message_id") if isinstance(reply, dict) else params.get("reply_to_message_id")
        if target is None:
            return None
        allow = isinstance(reply, dict) and reply.get("allow_sending_without_reply") is True
        if (chat_id, target) not in self.messages and not allow:
            raise _ApiError(400, "Bad Request: message to be replied not found")
        return int(target) if (chat_id, target) in self.messages else None

    def _bot_message(self, chat: dict[str, Any], reply_to: int | None, **fields: Any) -> dict[str, Any]:
        message = self.new_message(chat)
        message.update({"from": self.bot, **{key: value for key, value in fields.items() if value}})
        if reply_to is not None:
            message["reply_to_message"] = self.messages[(chat["id"], reply_to)]
        return message

    def _send_message(self, request: Request) -> dict[str, Any]:
        params = request.params
        chat = self._chat(params)
        source = params.get("text")
        if not isinstance(source, str) or not source.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        text, entities = self._formatted(source, params.get("parse_mode"), 4096, "Bad Request: message is too long")
        if not text.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        reply_to = self._reply_target(chat["id"], params)
        message = self._bot_message(chat, reply_to, text=text, entities=entities)
        record = SentMessage(chat["id"], message["message_id"], text, "sendMessage", params.get("parse_mode"), source)
        self.sent.append(_with(record, entities=tuple(entities), reply_to=reply_to))
        return message

    def _send_chat_action(self, request: Request) -> bool:
        chat = self._chat(request.params)
        action = request.params.get("action")
        if action not in _ACTIONS:
            raise _ApiError(400, "Bad Request: wrong parameter action in request")
        self.actions.append((chat["id"], str(action)))
        return True

    def _get_file(self, request: Request) -> dict[str, Any]:
        fake = self.files.get(str(request.params.get("file_id")))
        if fake is None:
            raise _ApiError(400, "Bad Request: invalid file_id")
        if fake.size > GETFILE_LIMIT:
            raise _ApiError(400, "Bad Request: file is too big")
        return {
            "file_id": fake.file_id,
            "file_unique_id": fake.file_unique_id,
            "file_size": fake.size,
            "file_path": fake.path,
        }

    def _download(self, path: str) -> Reply:
        token, _, file_path = path.removeprefix("/file/bot").partition("/")
        if token != self.token:
            return _error(401, "Unauthorized")
        fake = next((f for f in self.files.values() if f.path == file_path), None)
        if fake is None:
            return _error(404, "Not Found")
        self.downloads.append(file_path)
        return Reply(200, fake.data, "application/octet-stream")

    def _send_file(self, request: Request, kind: str) -> dict[str, Any]:
        params = request.params
        chat = self._chat(params)
        upload = request.uploads.get(kind)
        if upload is None:
            raise _ApiError(400, f"Bad Request: there is no {kind} in the request")
        if not upload.data:
            raise _ApiError(400, "Bad Request: file must be non-empty")
        if kind == "photo" and len(upload.data) > 10 * 1024 * 1024:
            raise _ApiError(400, "Bad Request: PHOTO_SAVE_FILE_INVALID")
        caption, _ = self._formatted(
            params.get("caption") or "", params.get("parse_mode"), 1024, "Bad Request: message caption is too long"
        )
        stored = self.add_file(upload.data, path=f"uploads/{upload.filename}")
        media: Any = (
            [stored.as_photo_size(1280, 960)]
            if kind == "photo"
            else stored.as_document(upload.filename, upload.media_type)
        )
        message = self._bot_message(chat, self._reply_target(chat["id"], params), caption=caption, **{kind: media})
        record = SentMessage(
            chat["id"], message["message_id"], caption, f"send{kind.title()}", params.get("parse_mode")
        )
        self.sent.append(_with(record, file=upload.data, file_name=upload.filename))
        return message

    def _delete_webhook(self, request: Request) -> bool:
        self.webhook_url = None
        return True


def _with(record: SentMessage, **changes: Any) -> SentMessage:
    return dataclasses.replace(record, **changes)


def _error(status: int, description: str, retry_after: int | None = None) -> Reply:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if retry_after is not None:
        body["parameters"] = {"retry_after": retry_after}
    return Reply.of_json(body, status)


def _normalise(raw: dict[str, Any]) -> dict[str, Any]:
    """Parameters as the Bot API reads them: JSON-serialised fields decoded, numbers from form strings."""
    params = dict(raw)
    for key in _JSON_FIELDS:
        if isinstance(params.get(key), str):
            try:
                params[key] = json.loads(params[key])
            except ValueError:
                raise _ApiError(400, f"Bad Request: can't parse {key} JSON object") from None
    for key in _INT_FIELDS:
        value = params.get(key)
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            params[key] = int(value)
    return params
