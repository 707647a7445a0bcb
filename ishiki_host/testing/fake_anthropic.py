"""``FakeAnthropicServer``: the Anthropic Messages protocol on 127.0.0.1 (``POST /v1/messages``)."""

from __future__ import annotations

import json
from typing import Any

from ishiki_host.jsontypes import Json
from ishiki_host.testing.fake_models import FakeModelServer, Reply, chunk_bytes
from ishiki_host.testing.http_server import Response

__all__ = ["FakeAnthropicServer"]


def _event(name: str, data: dict[str, Json]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _input(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return dict(arguments)
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments  # the non-streaming shape cannot carry broken JSON; send the text as is


class FakeAnthropicServer(FakeModelServer):
    """A loopback Anthropic Messages server. Its ``url`` is what a provider's ``base_url`` names."""

    api = "anthropic-messages"
    path = "/v1/messages"

    @property
    def base_url(self) -> str:
        """Anthropic's ``base_url`` is the host root (the adapter adds ``/v1/messages``)."""
        return self.url

    def overloaded(self) -> None:
        """Queue Anthropic's 529 ``overloaded_error``."""
        self.error(529, "Overloaded", type="overloaded_error")

    def render(self, reply: Reply, body: dict[str, Json], stream: bool, serial: int) -> Response:
        """A message, or its event stream ending in ``message_stop``."""
        model = str(body.get("model", "fake-model"))
        stop = reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")
        ids = [call.id or f"toolu_{serial}_{i}" for i, call in enumerate(reply.tool_calls)]
        if not stream:
            content: list[dict[str, Json]] = [{"type": "text", "text": reply.text}] if reply.text else []
            content += [
                {"type": "tool_use", "id": ids[i], "name": call.name, "input": _input(call.arguments)}
                for i, call in enumerate(reply.tool_calls)
            ]
            data: dict[str, Json] = {
                "id": f"msg_{serial}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
            }
            if reply.usage is not None:
                data["usage"] = {"input_tokens": reply.usage[0], "output_tokens": reply.usage[1]}
            return Response.json(data)
        return self._stream(reply, model, stop, ids, serial)

    def _stream(self, reply: Reply, model: str, stop: str, ids: list[str], serial: int) -> Response:
        usage = reply.usage
        message: dict[str, Json] = {
            "id": f"msg_{serial}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
        }
        if usage is not None:
            message["usage"] = {"input_tokens": usage[0], "output_tokens": 1}
        events = [_event("message_start", {"type": "message_start", "message": message})]
        index = 0
        if reply.text:
            events.append(
                _event(
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                )
            )
            events.append(_event("ping", {"type": "ping"}))
            for i in range(0, len(reply.text), 8):
                delta = {"type": "text_delta", "text": reply.text[i : i + 8]}
                events.append(
                    _event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
                )
            events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
            index = 1
        for call_id, call in zip(ids, reply.tool_calls, strict=True):
            block = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
            events.append(
                _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
            )
            text = call.arguments if isinstance(call.arguments, str) else json.dumps(dict(call.arguments))
            for i in range(0, len(text), 5):
                delta = {"type": "input_json_delta", "partial_json": text[i : i + 5]}
                events.append(
                    _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                )
            events.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        final: dict[str, Json] = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}}
        if usage is not None:
            final["usage"] = {"output_tokens": usage[1]}
        events += [_event("message_delta", final), _event("message_stop", {"type": "message_stop"})]
        headers = (("content-type", "text/event-stream"), ("cache-control", "no-cache"))
        return Response(200, headers, chunks=chunk_bytes(events, reply.chunk_size))

    def error_body(self, message: str, type: str, status: int) -> dict[str, Json]:
        """``{"type": "error", "error": {"type", "message"}}``."""
        return {"type": "error", "error": {"type": type, "message": message}}

    def context_length_response(self) -> Response:
        """Anthropic's 400 ``prompt is too long``."""
        return Response.json(
            self.error_body("prompt is too long: 208765 tokens > 200000 maximum", "invalid_request_error", 400), 400
        )
