"""The common part of the fake model servers: a queue of scripted answers and the requests received.

Tests (and plugin authors) script what the next calls get, in order; when the queue is empty the server
answers with ``default`` (a ``Reply("ok")`` unless changed). A queued item is a ``Reply`` (rendered in the
server's protocol, streamed when the request asked for a stream), a raw ``Response``, or a function of the
``RecordedRequest`` returning either. The fault helpers (``rate_limit``, ``server_error``, ``hang``...)
queue the answers real providers give in those cases. ``latency`` (seconds, default 0) delays every answer,
like a model that takes time to answer; concurrent requests wait concurrently. ``chunk_delay`` (seconds,
default 0) paces a streamed answer: the wait between two of its pieces (a model writing token by token); an
answer not streamed waits as long as its stream would have taken.
"""

from __future__ import annotations

import itertools
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ishiki_host.config.models import ModelSpec, ProviderConfig
from ishiki_host.jsontypes import Json
from ishiki_host.testing.http_server import LoopbackServer, RecordedRequest, Response

__all__ = ["FakeModelServer", "Reply", "ScriptedCall", "chunk_bytes"]


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call to answer with; ``arguments`` may be raw text (e.g. ``"{"``, to test bad arguments)."""

    name: str
    arguments: str | Mapping[str, Json] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """A successful answer: text and/or tool calls.

    ``usage`` is ``(input_tokens, output_tokens)``, or ``None`` to leave usage out (the client then estimates).
    ``chunk_size`` splits a streamed answer into pieces of that many bytes (``None``: one piece per event).
    ``finish_reason`` overrides the protocol's natural one.
    """

    text: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    usage: tuple[int, int] | None = (10, 5)
    chunk_size: int | None = None
    finish_reason: str | None = None


Scripted = Reply | Response | Callable[[RecordedRequest], "Reply | Response"]


def chunk_bytes(events: Sequence[bytes], chunk_size: int | None) -> list[bytes]:
    """The pieces to send: one per event, or the whole stream cut every ``chunk_size`` bytes."""
    if chunk_size is None:
        return list(events)
    data = b"".join(events)
    return [data[i : i + chunk_size] for i in range(0, len(data), chunk_size)]


class FakeModelServer(LoopbackServer, ABC):
    """Base of ``FakeOpenAIServer`` and ``FakeAnthropicServer``: start it (or use the fixtures), queue answers."""

    api: str = ""
    path: str = ""

    def __init__(self) -> None:
        super().__init__(self._handle)
        self.default: Scripted = Reply("ok")
        self.latency = 0.0
        self.chunk_delay = 0.0
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._cache: dict[bool, tuple[Reply, Response]] = {}

    @property
    def base_url(self) -> str:
        """The ``base_url`` a provider in models.yaml would name."""
        return f"{self.url}/v1"

    def provider(
        self, id: str = "fake", models: Sequence[str | ModelSpec] = ("fake-model",), **kw: Any
    ) -> ProviderConfig:
        """A ``ProviderConfig`` for this server (extra keywords go to ``ProviderConfig``)."""
        specs = tuple(m if isinstance(m, ModelSpec) else ModelSpec(m) for m in models)
        return ProviderConfig(id=id, api=self.api, base_url=self.base_url, models=specs, **kw)

    # -- scripting --------------------------------------------------------------------------------------

    def push(self, *answers: Scripted) -> None:
        """Queue answers for the next requests, in order."""
        with self._lock:
            self._queue.extend(answers)

    def reply(self, text: str = "", *, tool_calls: Sequence[ScriptedCall] = (), **kw: Any) -> None:
        """Queue a successful answer (keywords: ``usage``, ``chunk_size``, ``finish_reason``)."""
        self.push(Reply(text, tuple(tool_calls), **kw))

    def tool_call(self, name: str, arguments: str | Mapping[str, Json] | None = None, **kw: Any) -> None:
        """Queue an answer that calls one tool."""
        self.reply(tool_calls=[ScriptedCall(name, {} if arguments is None else arguments)], **kw)

    def error(
        self, status: int, message: str = "error", *, type: str = "api_error", headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        """Queue an HTTP error in the protocol's error shape."""
        self.push(Response.json(self.error_body(message, type, status), status, headers))

    def rate_limit(self, retry_after: str | None = "1") -> None:
        """Queue a 429, with ``Retry-After`` when given (seconds or an HTTP date)."""
        headers = (("retry-after", retry_after),) if retry_after is not None else ()
        self.error(429, "Rate limit reached. Please try again later.", type="rate_limit_error", headers=headers)

    def server_error(self, status: int = 500) -> None:
        """Queue a 5xx."""
        self.error(status, "The server had an error while processing your request.", type="server_error")

    def hang(self) -> None:
        """Queue an answer that never comes (until the server closes)."""
        self.push(Response(hang=True))

    def malformed(self, body: bytes = b'{"choices": [ {"message": ') -> None:
        """Queue a 200 whose body is not valid JSON."""
        self.push(Response(200, (("content-type", "application/json"),), body))

    def cut(self) -> None:
        """Queue an answer whose connection closes mid-body (mid-event for a stream)."""
        self.push(lambda request: self._cut(request))

    def context_length(self) -> None:
        """Queue the provider's real context-length error."""
        self.push(self.context_length_response())

    def error_object(self, message: str = "upstream failed", type: str = "invalid_request_error") -> None:
        """Queue a 200 whose body is an error object instead of a result."""
        self.push(Response.json(self.error_body(message, type, 200)))

    def _cut(self, request: RecordedRequest) -> Response:
        full = self._render(Reply("this answer is cut short"), request)
        if full.chunks is None:
            return Response(full.status, full.headers, full.body[: len(full.body) // 2], cut=True)
        data = b"".join(full.chunks)
        return Response(full.status, full.headers, chunks=[data[: len(data) // 2]], cut=True)

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent request (``IndexError`` if none came)."""
        return self.requests[-1]

    @property
    def bodies(self) -> list[Json]:
        """The JSON bodies of every request, in order."""
        return [r.json for r in self.requests]

    # -- serving ----------------------------------------------------------------------------------------

    def _handle(self, request: RecordedRequest) -> Response:
        if request.method != "POST" or request.path.split("?")[0] != self.path:
            return Response.json(self.error_body(f"no route {request.method} {request.path}", "not_found", 404), 404)
        with self._lock:
            answer = self._queue.popleft() if self._queue else self.default
        if callable(answer) and not isinstance(answer, Reply | Response):
            answer = answer(request)
        response = answer if isinstance(answer, Response) else self._render(answer, request)
        if self.latency and not response.delay:
            response = replace(response, delay=self.latency)
        if self.chunk_delay and not response.chunk_delay:
            response = self._paced(response, answer, request)
        return response

    def _paced(self, response: Response, answer: object, request: RecordedRequest) -> Response:
        """``chunk_delay`` applied: between the pieces of a stream, or, for an answer in one piece, once for
        each piece its stream would have had (a model writes the whole answer before it sends it)."""
        if response.chunks is not None:
            return replace(response, chunk_delay=self.chunk_delay)
        if not isinstance(answer, Reply):
            return response
        body = request.json if isinstance(request.json, dict) else {}
        streamed = self.render(answer, {**body, "stream": True}, True, 0).chunks or ()
        return replace(response, delay=response.delay + self.chunk_delay * max(len(streamed) - 1, 0))

    def _render(self, reply: Reply, request: RecordedRequest) -> Response:
        body = request.json if isinstance(request.json, dict) else {}
        stream = bool(body.get("stream"))
        if reply is self.default:  # pre-rendered: keeps the fake fast for benchmarks
            cached = self._cache.get(stream)
            if cached is None or cached[0] is not reply:
                cached = self._cache[stream] = (reply, self.render(reply, body, stream, 0))
            return cached[1]
        return self.render(reply, body, stream, next(self._ids))

    # -- protocol (subclasses) --------------------------------------------------------------------------

    @abstractmethod
    def render(self, reply: Reply, body: dict[str, Json], stream: bool, serial: int) -> Response:
        """The protocol's answer for ``reply`` to a request with ``body``."""

    @abstractmethod
    def error_body(self, message: str, type: str, status: int) -> dict[str, Json]:
        """The protocol's error JSON."""

    @abstractmethod
    def context_length_response(self) -> Response:
        """The protocol's context-length error."""
