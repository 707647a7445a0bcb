"""A loopback fake of the WhatsApp Cloud API's Graph endpoints over real HTTP, for tests and benchmarks.

``async with FakeGraphAPI() as graph:`` serves ``graph.url`` (127.0.0.1, an ephemeral port) in the running event
loop; give it to an account as ``graph_base``. Any ``/v<major>.<minor>/`` path prefix is taken. It implements:

- ``GET /{version}/{phone-number-id}``: the number (``display_phone_number``, ``verified_name``, ``id``);
- ``POST /{version}/{phone-number-id}/messages``: text (at most 4,096 characters), image, document and
  template messages (recorded in ``sent``; the answer carries a fresh ``wamid``), and mark-as-read with or
  without the typing indicator (recorded in ``reads``);
- ``POST /{version}/{phone-number-id}/media``: a multipart upload (in ``uploads``; the answer is its media id);
- ``GET /{version}/{media-id}``: the media's URL, which points back at this fake (``/download/<id>``), its type
  and size; ``GET /download/<id>``: the bytes, with the bearer token only (in ``downloads``).

Every call needs ``Authorization: Bearer <token>``; another token, or any token after ``expire_token()``, is
answered 401 with code 190 as Meta does. A message to a number in ``closed_windows`` is refused with 131047
(a template still goes out, as on WhatsApp).
``fail(name, Fault...)`` queues failures for a call by name (``phone``, ``messages``, ``read``, ``upload``,
``media``, ``download``): Graph API errors (131047, 130429, 131056, 190, 5xx) or a dropped connection. Errors
come in Meta's envelope ``{"error": {"message", "type", "code", "error_data": {"details"}, "fbtrace_id"}}``.

``calls`` lists every request; ``errors`` the fake's own crashes (a test should assert it stays empty). Waits
inside tests go through ``until(predicate)``, which wakes on every request, never on a timer.
"""

from __future__ import annotations

import collections
import itertools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

import anyio

from ishiki_channel_whatsapp.testing._http import Reply, Request, serve_http
from ishiki_channel_whatsapp.testing.payloads import DEFAULT_PHONE_NUMBER_ID
from ishiki_channel_whatsapp.testing.records import Call, Fault, MediaFile, ReadReceipt, SentMessage

if TYPE_CHECKING:
    import contextlib
    from types import TracebackType

__all__ = ["DEFAULT_ACCESS_TOKEN", "FakeGraphAPI"]

DEFAULT_ACCESS_TOKEN = "EAAFakeAccessTokenForTheLoopbackGraphAPI0123456789"
_VERSIONED = re.compile(r"^/(v[0-9]+\.[0-9]+)/(.+)$")
_TEXT_LIMIT = 4096
_CAPTION_LIMIT = 1024
_FBTRACE = "AFakeTraceIdForTheLoopbackGraph"


class _Refused(Exception):
    def __init__(self, fault: Fault):
        self.fault = fault


class FakeGraphAPI:
    """The fake server (see the module docstring)."""

    def __init__(
        self,
        *,
        token: str = DEFAULT_ACCESS_TOKEN,
        phone_number_id: str = DEFAULT_PHONE_NUMBER_ID,
        display_phone_number: str = "+1 555-010-0000",
        verified_name: str = "Ishiki Test",
    ):
        self.token = token
        self.phone_number_id = phone_number_id
        self.display_phone_number = display_phone_number
        self.verified_name = verified_name
        self.calls: list[Call] = []
        self.sent: list[SentMessage] = []
        self.reads: list[ReadReceipt] = []
        self.uploads: list[MediaFile] = []
        self.media: dict[str, MediaFile] = {}
        self.downloads: list[str] = []
        self.errors: list[str] = []
        self.closed_windows: set[str] = set()
        self.token_valid = True
        self.port = 0
        self._faults: dict[str, collections.deque[Fault | None]] = collections.defaultdict(collections.deque)
        self._wamids = itertools.count(1)
        self._media_ids = itertools.count(900_000_000_000_001)
        self._changed: anyio.Event | None = None
        self._serving: contextlib.AbstractAsyncContextManager[int] | None = None

    @property
    def url(self) -> str:
        """The base URL to give an account as ``graph_base``."""
        return f"http://127.0.0.1:{self.port}"

    def fail(self, name: str, *faults: Fault | None) -> None:
        """Answer the next calls ``name`` with ``faults``, in order; ``None`` answers one call as usual (so a
        later call fails: ``fail("messages", None, Fault.server_error())``)."""
        self._faults[name].extend(faults)

    def expire_token(self) -> None:
        """From now on every call is refused with 190, as when a token expired or was revoked."""
        self.token_valid = False

    def add_media(self, data: bytes, mime_type: str = "image/jpeg", *, filename: str | None = None) -> str:
        """Hold ``data`` as media a person sent; its media id (for ``payloads.media_message``)."""
        media = MediaFile(str(next(self._media_ids)), data, mime_type, filename)
        self.media[media.id] = media
        return media.id

    def count(self, name: str) -> int:
        """How many calls ``name`` arrived."""
        return sum(1 for call in self.calls if call.name == name)

    async def until(self, predicate: Callable[[], bool], *, deadline: float = 10.0) -> None:
        """Return once ``predicate()`` holds; checked after every request. ``deadline`` is a safety net."""
        with anyio.fail_after(deadline):
            while not predicate():
                self._changed = self._changed or anyio.Event()
                await self._changed.wait()

    async def __aenter__(self) -> Self:
        self._serving = serve_http(self._handle, self.errors)
        self.port = await self._serving.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._serving is not None
        await self._serving.__aexit__(exc_type, exc, tb)

    async def _handle(self, request: Request) -> Reply | None:
        name, answer = self._route(request)
        reply: Reply | None
        try:
            self._authorise(request)
            queued = self._faults.get(name)
            fault = queued.popleft() if queued else None
            if fault is not None:
                raise _Refused(fault)
            reply = answer(request)
        except _Refused as refused:
            reply = None if refused.fault.cut else _error(refused.fault)
        self.calls.append(Call(name, request.method, request.path, reply.status if reply else None))
        if self._changed is not None:
            self._changed.set()
            self._changed = None
        return reply

    def _route(self, request: Request) -> tuple[str, Callable[[Request], Reply]]:
        if request.method == "GET" and request.path.startswith("/download/"):
            return "download", self._download
        match = _VERSIONED.match(request.path)
        rest = match.group(2) if match else ""
        number = self.phone_number_id
        if request.method == "POST" and rest == f"{number}/messages":
            return ("read" if request.params.get("status") == "read" else "messages"), self._messages
        if request.method == "POST" and rest == f"{number}/media":
            return "upload", self._upload
        if request.method == "GET" and rest == number:
            return "phone", lambda request: Reply.of_json(self._phone())
        if request.method == "GET" and rest in self.media:
            return "media", lambda request: Reply.of_json(self._media_info(rest))
        return "unknown", _unknown_object

    def _authorise(self, request: Request) -> None:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            raise _Refused(Fault(190, 401, "Invalid OAuth access token - Cannot parse access token"))
        if not self.token_valid:
            raise _Refused(Fault.token_expired())

    def _phone(self) -> dict[str, Any]:
        return {
            "display_phone_number": self.display_phone_number,
            "verified_name": self.verified_name,
            "id": self.phone_number_id,
        }

    def _media_info(self, media_id: str) -> dict[str, Any]:
        media = self.media[media_id]
        return {
            "messaging_product": "whatsapp",
            "url": f"{self.url}/download/{media_id}",
            "mime_type": media.mime_type,
            "sha256": "0" * 64,
            "file_size": len(media.data),
            "id": media_id,
        }

    def _download(self, request: Request) -> Reply:
        media = self.media.get(request.path.removeprefix("/download/"))
        if media is None:
            return Reply(404, b"not found", "text/plain")
        self.downloads.append(media.id)
        return Reply(200, media.data, media.mime_type)

    def _upload(self, request: Request) -> Reply:
        file = request.uploads.get("file")
        if request.params.get("messaging_product") != "whatsapp" or file is None:
            raise _Refused(Fault(100, 400, "(#100) The parameter messaging_product is required."))
        media = MediaFile(
            str(next(self._media_ids)), file.data, request.params.get("type") or file.media_type, file.filename
        )
        self.media[media.id] = media
        self.uploads.append(media)
        return Reply.of_json({"id": media.id})

    def _messages(self, request: Request) -> Reply:
        body = request.json if isinstance(request.json, dict) else {}
        if body.get("messaging_product") != "whatsapp":
            raise _Refused(Fault(100, 400, "(#100) The parameter messaging_product is required."))
        if body.get("status") == "read":
            return self._read(body)
        message = self._message(body)
        if message.to in self.closed_windows and message.type != "template":
            raise _Refused(Fault.window_closed())
        self.sent.append(message)
        answer = {
            "messaging_product": "whatsapp",
            "contacts": [{"input": message.to, "wa_id": message.to}],
            "messages": [{"id": message.id}],
        }
        return Reply.of_json(answer)

    def _read(self, body: dict[str, Any]) -> Reply:
        message_id = body.get("message_id")
        if not isinstance(message_id, str) or not message_id:
            raise _Refused(Fault(100, 400, "(#100) The parameter message_id is required."))
        typing = body.get("typing_indicator")
        self.reads.append(ReadReceipt(message_id, isinstance(typing, dict) and typing.get("type") == "text"))
        return Reply.of_json({"success": True})

    def _message(self, body: dict[str, Any]) -> SentMessage:
        to, kind = body.get("to"), body.get("type", "text")
        group = body.get("recipient_type") == "group"
        if not isinstance(to, str) or not (group or to.isdigit()):
            raise _Refused(Fault(100, 400, "(#100) Invalid parameter: to"))
        item: dict[str, Any] = body[kind] if isinstance(body.get(kind), dict) else {}
        context: dict[str, Any] = body["context"] if isinstance(body.get("context"), dict) else {}
        reply_to = context.get("message_id")
        text = media_id = caption = None
        if kind == "text":
            text = _limited(item.get("body"), _TEXT_LIMIT, "text['body']")
        elif kind in ("image", "document"):
            media_id = item.get("id")
            if media_id not in self.media:
                raise _Refused(Fault(131053, 400, "Media upload error: unknown media id"))
            caption = _limited(item.get("caption"), _CAPTION_LIMIT, f"{kind}['caption']", required=False)
        elif kind == "template":
            if not isinstance(item.get("name"), str):
                raise _Refused(Fault(132001, 400, "Template name does not exist in the translation"))
        else:
            raise _Refused(Fault(100, 400, f"(#100) Param type {kind!r} is not supported here"))
        wamid = f"wamid.FAKE{next(self._wamids):08d}"
        return SentMessage(wamid, to, str(kind), text, reply_to, media_id, caption, body)


def _limited(value: Any, limit: int, what: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise _Refused(Fault(100, 400, f"(#100) The parameter {what} is required."))
    if len(value) > limit:
        raise _Refused(Fault(100, 400, f"(#100) Param {what} must be at most {limit} characters long."))
    return value


def _unknown_object(request: Request) -> Reply:
    words = (
        f"Unsupported {request.method.lower()} request. Object with ID '{request.path.rsplit('/', 1)[-1]}' does not "
        "exist, cannot be loaded due to missing permissions, or does not support this operation."
    )
    return _error(Fault(100, 400, words))


def _error(fault: Fault) -> Reply:
    error: dict[str, Any] = {"message": fault.message or f"HTTP {fault.status}", "type": "OAuthException"}
    if fault.code is not None:
        error["code"] = fault.code
        error["error_data"] = {"messaging_product": "whatsapp", "details": fault.message}
    error["fbtrace_id"] = _FBTRACE
    return Reply.of_json({"error": error}, fault.status)
