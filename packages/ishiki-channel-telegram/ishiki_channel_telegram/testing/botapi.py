"""A loopback fake of the Telegram Bot API over real HTTP, for tests and benchmarks.

``async with FakeBotAPI() as server:`` serves ``server.url`` (127.0.0.1, an ephemeral port) in the running
event loop. It implements ``getMe``, ``getUpdates`` with long-poll semantics (an answer at once when updates
are queued, else a wait of up to ``timeout`` that ends as soon as one is pushed; a newer poll ends an older
one with 409, as Telegram does), ``sendMessage`` with the real limits and error wording (4,096 UTF-16 units
after HTML parsing, ``can't parse entities``, ``message is too long``, ``message to be replied not found``,
``chat not found``), ``sendChatAction``, ``getFile`` and the file URL (20 MB limit), ``sendPhoto`` and
``sendDocument`` (multipart), ``sendMessageDraft``, ``editMessageText`` and ``deleteMessage`` (``_drafting``:
drafts can be refused as an older server would, edits rate-limited), and the webhook: ``setWebhook``,
``deleteWebhook``, ``getWebhookInfo``, with delivery to the webhook over real HTTP when the test calls
``deliver()`` (``_webhook``).

Faults: a wrong token gets 401 (404 when it is not even shaped like one); a webhook set makes ``getUpdates``
answer 409, as Telegram does; ``fail(method, Fault...)`` queues errors, 429s with ``retry_after``, dropped
connections and requests never answered; ``offline = True`` drops every request, the long poll in progress too.

Update ids: ``renumber(next_id)`` starts a new numbering, as Telegram does after a week without updates (the
next id is chosen at random and may be below every id before); an ``offset`` from the old numbering then
confirms none of the new updates, so a bot that skips ids below its offset gets the same update forever.
A text holding a lone UTF-16 surrogate (half an emoji) goes out as its ``\\uXXXX`` escape, as the Bot API's
JSON does.

Records: every call (``calls``), every message sent (``sent``), every draft frame (``drafts``), edit
(``edits``) and deletion (``deleted``), every typing action (``actions``), every
download (``downloads``); ``errors`` lists the fake's own crashes. ``redeliver(update)`` puts confirmed updates
back, as if the confirmation never reached Telegram. Waits inside tests go through
``until(predicate)``, which wakes on every change, never on a timer.
"""

from __future__ import annotations

import collections
import itertools
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

import anyio

from ishiki_channel_telegram.testing._drafting import Drafting
from ishiki_channel_telegram.testing._http import Reply, Request, serve_http
from ishiki_channel_telegram.testing._webhook import Webhooks
from ishiki_channel_telegram.testing._wire import ApiError, error_reply, normalise
from ishiki_channel_telegram.testing.builders import Call, Fault, SentMessage

if TYPE_CHECKING:
    import contextlib
    from types import TracebackType

    from ishiki_host import Clock

__all__ = ["DEFAULT_TOKEN", "FakeBotAPI"]

DEFAULT_TOKEN = "7000000001:AAFakeTokenForTheLoopbackBotAPI_0123456"
_NOT_BY_DEFAULT = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
_WEBHOOK_CONFLICT = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
)


class _Dropped(Exception):
    """The connection is to be closed without an answer."""


class _Waiter:
    def __init__(self, offset: int | None):
        self.offset = offset
        self.event = anyio.Event()
        self.superseded = False
        self.dropped = False


class FakeBotAPI(Drafting, Webhooks):
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
        self._init_webhooks()
        self._init_drafting(clock.now if clock else time.time)
        self._offline = False
        self.confirmed = 0
        self.port = 0
        self._allowed: frozenset[str] | None = None  # None: every kind but _NOT_BY_DEFAULT
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
            "setWebhook": self._set_webhook,
            "deleteWebhook": self._delete_webhook,
            "getWebhookInfo": self._get_webhook_info,
            **self._draft_methods(),
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

    def redeliver(self, *updates: dict[str, Any]) -> None:
        """Queue ``updates`` again with their own ids, as Telegram does when the ``getUpdates`` that confirmed
        them never reached it (the bot died first): the state a crash between "durable" and "confirmed" leaves.
        """
        queued = {update["update_id"] for update in self.updates}
        merged = [*self.updates, *(update for update in updates if update["update_id"] not in queued)]
        self.updates.clear()
        self.updates.extend(sorted(merged, key=lambda update: int(update["update_id"])))
        self.confirmed = min([self.confirmed, *(int(update["update_id"]) for update in updates)])
        self._pushed()

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
            return None if self.offline else error_reply(404, "Not Found")
        token, method = match.groups()
        uploads = {name: upload.filename for name, upload in request.uploads.items()}
        if self.offline:
            self.calls.append(Call(method, dict(request.params), uploads, ok=False))
            return None
        try:
            params = normalise(request.params)
        except ApiError as exc:
            self.calls.append(Call(method, request.params, uploads, ok=False))
            return error_reply(exc.status, exc.description)
        if token != self.token:
            self.calls.append(Call(method, params, uploads, ok=False))
            return error_reply(401, "Unauthorized") if ":" in token else error_reply(404, "Not Found")
        fault = self._faults[method].popleft() if self._faults.get(method) else None
        if fault is not None:
            self.calls.append(Call(method, params, uploads, ok=False))
            if fault.hang:
                self._notify()
                await anyio.sleep_forever()
            return None if fault.drop else error_reply(fault.status, fault.description, fault.retry_after)
        handler = self._methods.get(method)
        if handler is None:
            return error_reply(404, "Not Found: method not found")
        request.params = params
        try:
            result = handler(request)
            if hasattr(result, "__await__"):
                result = await result
        except _Dropped:
            self.calls.append(Call(method, params, uploads, ok=False))
            return None
        except ApiError as exc:
            self.calls.append(Call(method, params, uploads, ok=False))
            return error_reply(exc.status, exc.description, exc.retry_after)
        self.calls.append(Call(method, params, uploads))
        return Reply.of_json({"ok": True, "result": result})

    async def _get_updates(self, request: Request) -> list[dict[str, Any]]:
        if self.webhook_url:
            raise ApiError(409, _WEBHOOK_CONFLICT)
        params = request.params
        offset = params.get("offset")
        if isinstance(offset, int) and offset > 0:
            self._confirm(offset)
        if isinstance(params.get("allowed_updates"), list):
            self._allowed = frozenset(params["allowed_updates"]) or None
        limit = min(max(int(params.get("limit", 100)), 1), 100)
        if self._waiter is not None:
            self._waiter.superseded = True
            self._waiter.event.set()
        ready = self._ready(limit)
        timeout = int(params.get("timeout", 0))
        if not ready and timeout > 0:
            ready = await self._wait(offset if isinstance(offset, int) else None, timeout, limit)
        return ready

    def _confirm(self, offset: int) -> None:
        """Forget the updates below ``offset``; after ``renumber``, a stale offset (beyond every new id)
        confirms none of the new ones."""
        numbering = self.numbering if self.numbering is not None else set()
        stale = self.numbering is not None and offset > max(numbering, default=0) + 1
        spared = numbering if stale else set()
        kept = [u for u in self.updates if u["update_id"] >= offset or u["update_id"] in spared]
        self.updates.clear()
        self.updates.extend(kept)
        if not stale:
            self.confirmed = max(self.confirmed, offset)

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
            raise ApiError(409, Fault.conflict().description)
        return self._ready(limit)

    def _ready(self, limit: int) -> list[dict[str, Any]]:
        allowed = (u for u in self.updates if self._wanted(next((k for k in u if k != "update_id"), "")))
        return list(itertools.islice(allowed, limit))

    def _wanted(self, kind: str) -> bool:
        return kind not in _NOT_BY_DEFAULT if self._allowed is None else kind in self._allowed
