"""``FakeOneBot``: a loopback OneBot v11 implementation over real WebSockets and HTTP, for tests and benchmarks.

It plays NapCat's side in all three modes, in the caller's event loop (``async with FakeOneBot() as bot``):

- forward: a WebSocket server at ``bot.url`` (``ws://127.0.0.1:<port>/``) the channel connects to;
- reverse: ``await bot.connect_reverse(url)`` connects to the host's ingress and keeps the link, reconnecting
  after ``reconnect_seconds`` when it drops, as implementations do;
- http: its HTTP API at ``bot.http_url`` (``POST /<action>``), and ``bot.post_events_to(url)`` makes it post
  events there (``posts`` records each answer's status).

Events: ``push_private`` / ``push_group`` / ``push`` send a frame (``builders``) to every link (or post it), and
keep the message for ``get_msg``. Actions are answered as v11 has them (``send_private_msg``,
``send_group_msg``, ``send_msg``, ``delete_msg``, ``get_login_info``, ``get_msg``, ``get_image``,
``get_record``, ``get_forward_msg``, ``get_status``, ``get_version_info``); each is recorded in ``calls``, each
message sent in ``sent``. Media added with ``add_file`` is served at ``/files/<name>``.

Errors to inject: ``fail(action, retcode)`` (the next calls answer ``status: failed``), ``slow(action,
seconds)`` and ``hang(action)`` (no answer at all), ``drop_links()`` (every WebSocket closed at once),
``silence()`` (the links open now stay open but send and answer nothing more: a half-open link; new links
work), a wrong
``access_token`` (a handshake or call without it is answered 401), and ``push_raw`` for malformed frames.
``until(predicate)`` waits for what the fake sees (a call, a link, a post).
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Self

import anyio
import httpx
import uvicorn
import websockets
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.asyncio.client import connect

from ishiki_channel_onebot.auth import bearer, token_matches
from ishiki_channel_onebot.testing import builders
from ishiki_channel_onebot.testing._actions import ActionBook, Call, SentMessage, json_segments

__all__ = ["DEFAULT_ACCESS_TOKEN", "DEFAULT_SELF_ID", "Call", "FakeOneBot", "SentMessage"]

DEFAULT_SELF_ID = 10001
DEFAULT_ACCESS_TOKEN = "test-onebot-token"


@dataclass(eq=False)
class _Link:
    send: Callable[[str], Awaitable[None]]
    close: Callable[[], Awaitable[None]]
    kind: str
    silent: bool = False


class FakeOneBot:
    """A OneBot v11 implementation on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self,
        *,
        self_id: int = DEFAULT_SELF_ID,
        nickname: str = "Ishiki",
        access_token: str | None = DEFAULT_ACCESS_TOKEN,
        reconnect_seconds: float = 0.05,
    ):
        self.self_id = self_id
        self.nickname = nickname
        self.access_token = access_token
        self.reconnect_seconds = reconnect_seconds
        self.book = ActionBook(self_id, nickname, lambda name: f"{self.http_url}/files/{name}", self._notify)
        self.calls, self.sent, self.deleted = self.book.calls, self.book.sent, self.book.deleted
        self.messages, self.files, self.forwards = self.book.messages, self.book.files, self.book.forwards
        self.posts: list[int] = []
        self.refused = 0
        self.connections = 0
        self.errors: list[str] = []
        self._links: set[_Link] = set()
        self._changed = anyio.Event()
        self._post_url: str | None = None
        self._post_token: str | None = None
        self._client = httpx.AsyncClient(timeout=30.0, trust_env=False)
        self._tg: anyio.abc.TaskGroup | None = None
        self._server: uvicorn.Server | None = None
        self._socket: socket.socket | None = None
        self.port = 0

    # -- life -------------------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        self._socket = sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        sock.setblocking(False)
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(self._app(), lifespan="off", log_config=None, access_log=False, ws_max_size=64 << 20)
        config.load()
        self._server = uvicorn.Server(config)
        self._server.lifespan = config.lifespan_class(config)
        await self._server.startup(sockets=[sock])
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        assert self._server is not None
        assert self._socket is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        await self.drop_links()
        self._server.should_exit = True
        await self._server.shutdown(sockets=[self._socket])
        self._socket.close()
        await self._client.aclose()

    @property
    def url(self) -> str:
        """The forward WebSocket server."""
        return f"ws://127.0.0.1:{self.port}/"

    @property
    def http_url(self) -> str:
        """The HTTP API's base."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def links(self) -> int:
        """WebSocket links open now (forward and reverse)."""
        return len(self._links)

    # -- what the test does -----------------------------------------------------------------------------------

    def fail(self, action: str, retcode: int = 100, wording: str = "injected failure", *, times: int = 1) -> None:
        """The next ``times`` calls of ``action`` answer ``status: failed`` with ``retcode``."""
        self.book.fail(action, retcode, wording, times)

    def slow(self, action: str, seconds: float, *, times: int = 1) -> None:
        """The next ``times`` calls of ``action`` are answered after ``seconds`` (real time)."""
        self.book.slow(action, seconds, times)

    def hang(self, action: str, *, times: int = 1) -> None:
        """The next ``times`` calls of ``action`` are never answered."""
        self.book.hang(action, times)

    def add_file(self, name: str, data: bytes) -> str:
        """Keep ``data`` as the file ``name`` (served at ``/files/<name>``; ``get_image``/``get_record`` find
        it); returns ``name``."""
        self.files[name] = data
        return name

    def add_forward(self, forward_id: str, nodes: list[tuple[int, str, builders.MessageLike]]) -> str:
        """Keep a forwarded message: ``(user_id, nickname, message)`` per node."""
        self.forwards[forward_id] = [
            {"sender": {"user_id": qq, "nickname": name}, "time": 0, "message": json_segments(builders.to_segments(m))}
            for qq, name, m in nodes
        ]
        return forward_id

    async def push_private(self, user_id: int, message: builders.MessageLike, **keys: Any) -> dict[str, Any]:
        """Send a private message event from ``user_id``; the frame."""
        return await self.push(builders.private_message(self.self_id, user_id, message, **keys))

    async def push_group(
        self, group_id: int, user_id: int, message: builders.MessageLike, **keys: Any
    ) -> dict[str, Any]:
        """Send a group message event; the frame."""
        return await self.push(builders.group_message(self.self_id, group_id, user_id, message, **keys))

    async def push(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Send ``frame`` to every link (or post it in http mode); a message is kept for ``get_msg``."""
        if frame.get("post_type") == "message":
            self.messages[int(frame["message_id"])] = frame
        await self.push_raw(json.dumps(frame))
        return frame

    async def push_raw(self, raw: str) -> None:
        """Send ``raw`` as it is (a malformed frame, say)."""
        if self._post_url is not None:
            self.posts.append(await self._post(raw))
            self._notify()
            return
        for link in list(self._links):
            if not link.silent:
                with contextlib.suppress(Exception):
                    await link.send(raw)

    def silence(self) -> None:
        """The links open now send and answer nothing more (they stay open, as a half-open link does)."""
        for link in self._links:
            link.silent = True

    async def heartbeat(self, interval_ms: int = 5000) -> None:
        """Send a heartbeat meta-event."""
        await self.push(builders.heartbeat(self.self_id, interval_ms))

    async def drop_links(self) -> None:
        """Close every WebSocket link at once (the reverse ones reconnect after ``reconnect_seconds``)."""
        for link in list(self._links):
            with contextlib.suppress(Exception):
                await link.close()
        self._links.clear()
        self._notify()

    async def connect_reverse(self, url: str, *, token: str | None = None, self_id: int | None = None) -> None:
        """Keep a reverse WebSocket to ``url`` (the host's ingress), with ``token`` (default: the fake's own)
        and ``X-Self-ID``; returns once the first attempt ended (connected, or refused: see ``refused``)."""
        assert self._tg is not None
        headers = {"X-Self-ID": str(self_id or self.self_id), "X-Client-Role": "Universal"}
        headers.update(bearer(token if token is not None else self.access_token))
        first = anyio.Event()
        self._tg.start_soon(self._reverse_forever, url, headers, first)
        await first.wait()

    def post_events_to(self, url: str, *, token: str | None = None) -> None:
        """HTTP mode: post every event to ``url`` from now on (with ``token`` as a bearer; default the fake's)."""
        self._post_url, self._post_token = url, token if token is not None else self.access_token

    async def until(self, predicate: Callable[[], bool], *, deadline: float = 10.0) -> None:
        """Return once ``predicate()`` holds, checked whenever the fake sees something."""
        with anyio.fail_after(deadline):
            while not predicate():
                await self._changed.wait()

    def count(self, action: str) -> int:
        """How many times ``action`` was called."""
        return sum(1 for call in self.calls if call.action == action)

    # -- the server -------------------------------------------------------------------------------------------

    def _app(self) -> Starlette:
        return Starlette(
            routes=[
                WebSocketRoute("/", self._forward),
                Route("/files/{name}", self._file, methods=["GET"]),
                Route("/{action}", self._http_action, methods=["GET", "POST"]),
            ]
        )

    async def _forward(self, ws: WebSocket) -> None:
        query = dict(ws.query_params.items())
        if not token_matches(self.access_token, {k.lower(): v for k, v in ws.headers.items()}, query):
            self.refused += 1
            self._notify()
            await ws.send_denial_response(PlainTextResponse("wrong access token", 401))
            return
        await ws.accept()
        link = _Link(ws.send_text, lambda: ws.close(1011, "dropped"), "forward")
        await self._serve_link(link, ws.receive_text, WebSocketDisconnect)

    async def _reverse_forever(self, url: str, headers: dict[str, str], first: anyio.Event) -> None:
        while True:
            try:
                async with connect(url, additional_headers=headers, max_size=64 << 20) as client:
                    link = _Link(client.send, lambda: client.close(1011, "dropped"), "reverse")
                    first.set()
                    await self._serve_link(link, client.recv, websockets.ConnectionClosed)
            except websockets.InvalidStatus:
                self.refused += 1
                self._notify()
            except (OSError, websockets.InvalidHandshake, websockets.ConnectionClosed):
                pass
            first.set()
            await anyio.sleep(self.reconnect_seconds)

    async def _serve_link(self, link: _Link, receive: Callable[[], Awaitable[Any]], closed: type[Exception]) -> None:
        assert self._tg is not None
        self._links.add(link)
        self.connections += 1
        self._notify()
        try:
            await link.send(json.dumps(builders.lifecycle(self.self_id)))
            while True:
                raw = await receive()
                self._tg.start_soon(self._answer_frame, link, raw)
        except (closed, RuntimeError, OSError):
            pass
        finally:
            self._links.discard(link)
            self._notify()

    async def _answer_frame(self, link: _Link, raw: str | bytes) -> None:
        try:
            frame = json.loads(raw)
            answer = await self.book.answer(str(frame.get("action")), frame.get("params") or {}, "ws")
        except Exception as exc:  # the fake's own bug: kept for the fixture to report
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return
        if "echo" in frame:
            answer["echo"] = frame["echo"]
        if not link.silent and link in self._links:
            with contextlib.suppress(Exception):
                await link.send(json.dumps(answer))

    async def _http_action(self, request: Request) -> Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        if not token_matches(self.access_token, headers, dict(request.query_params.items())):
            self.refused += 1
            self._notify()
            return PlainTextResponse("wrong access token", 401)
        try:
            body = await request.body()
        except ClientDisconnect:  # the host died mid-request
            return PlainTextResponse("the client left", 400)
        params = json.loads(body) if body else dict(request.query_params.items())
        return JSONResponse(await self.book.answer(request.path_params["action"], params, "http"))

    async def _file(self, request: Request) -> Response:
        data = self.files.get(request.path_params["name"])
        return Response(data, media_type="application/octet-stream") if data is not None else Response(status_code=404)

    async def _post(self, raw: str) -> int:
        assert self._post_url is not None
        try:
            answer = await self._client.post(self._post_url, content=raw, headers=bearer(self._post_token))
        except httpx.HTTPError:
            return 0
        return answer.status_code

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()
