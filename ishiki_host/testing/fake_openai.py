"""``FakeOpenAIServer``: the OpenAI Chat Completions protocol on 127.0.0.1 (``POST /v1/chat/completions``),
and the embeddings API (``POST /v1/embeddings``) answered by a deterministic ``ConceptEmbedder``."""

from __future__ import annotations

import json
import threading
from collections import deque
from typing import Any

from ishiki_host.jsontypes import Json
from ishiki_host.testing.embeddings import ConceptEmbedder
from ishiki_host.testing.fake_models import FakeModelServer, Reply, chunk_bytes
from ishiki_host.testing.http_server import RecordedRequest, Response

__all__ = ["FakeOpenAIServer"]

CREATED = 1_700_000_000


def _arguments(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(dict(arguments))


def _pieces(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _event(data: dict[str, Json] | str) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


class FakeOpenAIServer(FakeModelServer):
    """A loopback OpenAI-compatible server. ``base_url`` is what a provider's ``base_url`` names.

        Also answers with ``empty_choices()`` (a 200 with ``"choices": []``).

        ``POST /v1/embeddings`` answers with ``embedder``'s vectors (a ``ConceptEmbedder`` of 128 dimensions unless
        replaced), or with what ``push_embeddings`` queued (an outage, vectors of another length...);
        ``embedding_requests`` lists the requests it received (``requests`` holds them too, among the chat
    requests); chat scripting is unaffected.
    """

    api = "openai-completions"
    path = "/v1/chat/completions"
    embeddings_path = "/v1/embeddings"

    def __init__(self) -> None:
        super().__init__()
        self.embedder = ConceptEmbedder()
        self.embedding_requests: list[RecordedRequest] = []
        self._embedding_queue: deque[Response] = deque()
        self._embedding_lock = threading.Lock()

    def push_embeddings(self, *answers: Response) -> None:
        """Queue answers for the next ``/embeddings`` requests, in order (then the embedder answers again)."""
        with self._embedding_lock:
            self._embedding_queue.extend(answers)

    def embeddings_down(self, times: int = 1) -> None:
        """Queue ``times`` 503 answers to ``/embeddings`` (an embeddings model that is down)."""
        self.push_embeddings(*[Response.json(self.error_body("model is loading", "server_error", 503), 503)] * times)

    @staticmethod
    def embeddings_response(vectors: list[list[float]], model: str = "fake-embed") -> Response:
        """The 200 answer of ``/embeddings`` carrying ``vectors`` (to queue vectors of a chosen length)."""
        data: list[Json] = [{"object": "embedding", "index": i, "embedding": list(v)} for i, v in enumerate(vectors)]
        return Response.json({"object": "list", "model": model, "data": data})

    def _handle(self, request: RecordedRequest) -> Response:
        if request.method != "POST" or request.path.split("?")[0] != self.embeddings_path:
            return super()._handle(request)
        with self._embedding_lock:
            self.embedding_requests.append(request)
            queued = self._embedding_queue.popleft() if self._embedding_queue else None
        if queued is not None:
            return queued
        body = request.json if isinstance(request.json, dict) else {}
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return Response.json(self.error_body("input must be a string or a list of strings", "invalid", 400), 400)
        vectors = [self.embedder.vector(str(text)) for text in texts]
        return self.embeddings_response(vectors, str(body.get("model", "fake-embed")))

    def empty_choices(self) -> None:
        """Queue a 200 with an empty choices list."""
        self.push(Response.json({"id": "chatcmpl-empty", "object": "chat.completion", "choices": []}))

    def render(self, reply: Reply, body: dict[str, Json], stream: bool, serial: int) -> Response:
        """A chat.completion, or its chunk stream ending in ``[DONE]``."""
        model = str(body.get("model", "fake-model"))
        calls = [
            {
                "id": call.id or f"call_{serial}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call.arguments)},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        usage = None
        if reply.usage is not None:
            usage = {
                "prompt_tokens": reply.usage[0],
                "completion_tokens": reply.usage[1],
                "total_tokens": sum(reply.usage),
            }
        head = {"id": f"chatcmpl-{serial}", "created": CREATED, "model": model}
        if not stream:
            message: dict[str, Json] = {"role": "assistant", "content": reply.text or None}
            if calls:
                message["tool_calls"] = calls
            data = {
                **head,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            }
            if usage is not None:
                data["usage"] = usage
            return Response.json(data)
        return self._stream(reply, head, calls, finish, usage if body.get("stream_options") else None)

    def _stream(
        self,
        reply: Reply,
        head: dict[str, Json],
        calls: list[dict[str, Json]],
        finish: str,
        usage: dict[str, Json] | None,
    ) -> Response:
        head = {**head, "object": "chat.completion.chunk"}

        def chunk(delta: dict[str, Json], finish_reason: str | None = None) -> bytes:
            return _event({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in _pieces(reply.text)]
        for index, call in enumerate(calls):
            start = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            events.append(chunk({"tool_calls": [start]}))
            for piece in _pieces(call["function"]["arguments"], 5):
                events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        events.append(chunk({}, finish))
        if usage is not None:
            events.append(_event({**head, "choices": [], "usage": usage}))
        events.append(_event("[DONE]"))
        headers = (("content-type", "text/event-stream"), ("cache-control", "no-cache"))
        return Response(200, headers, chunks=chunk_bytes(events, reply.chunk_size))

    def error_body(self, message: str, type: str, status: int) -> dict[str, Json]:
        """``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": message, "type": type, "param": None, "code": None}}

    def context_length_response(self) -> Response:
        """OpenAI's 400 ``context_length_exceeded``."""
        message = (
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. "
            "Please reduce the length of the messages."
        )
        error = {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
        return Response.json({"error": error}, 400)
