"""``anthropic-messages``: the Anthropic Messages protocol.

``base_url`` defaults to ``https://api.anthropic.com``; requests go to ``{base_url}/v1/messages`` (or
``{base_url}/messages`` when ``base_url`` already ends in ``/v1``). Leading system messages become the ``system``
parameter; a system message later in the conversation becomes a user text block (the API has no system role
inside ``messages``). Tool results are ``tool_result`` blocks in user messages, merged with neighbours of the
same role. Provider option: ``anthropic_version`` (header ``anthropic-version``, default ``2023-06-01``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import Any, ClassVar

import httpx

from ishiki_host.config.models import ModelSpec, ProviderConfig
from ishiki_host.core.messages import ImagePart, Message, TextPart
from ishiki_host.core.model import (
    FinishReason,
    ModelRequest,
    ModelResult,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
)
from ishiki_host.core.tokens import Estimator, estimate_tokens
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.gateway.assemble import StreamAssembler
from ishiki_host.gateway.classify import malformed, stream_cut
from ishiki_host.gateway.providers._body import MessagesJSON, ToolsJSON, json_body
from ishiki_host.gateway.providers._http import finish_stream, join_url, parse_event_json, post_json, post_sse

__all__ = ["AnthropicMessagesAPI", "AnthropicMessagesClient", "encode_body", "encode_request"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_IMAGE_REFUSED = "[an image was left out: this model does not accept images]"


def _image_block(image: ImagePart) -> dict[str, Any]:
    if image.url.startswith("data:"):
        header, _, data = image.url.partition(",")
        media_type = image.media_type or header[5:].split(";")[0] or "image/png"
        if ";base64" not in header:
            data = base64.b64encode(data.encode()).decode()
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    if image.url.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": image.url}}
    return {"type": "text", "text": f"[an image was left out: {image.url.split(':', 1)[0]}: URLs cannot be sent]"}


def _blocks(message: Message, images_ok: bool) -> list[dict[str, Any]]:
    if message.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": message.text,
        }
        if message.is_error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:  # the API refuses empty text blocks
                blocks.append({"type": "text", "text": part.text})
        else:
            blocks.append(_image_block(part) if images_ok else {"type": "text", "text": _IMAGE_REFUSED})
    if message.role == "system":
        return [{"type": "text", "text": f"[system] {message.text}"}] if message.text else []
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)}
        for call in message.tool_calls
    )
    return blocks


def _system(messages: tuple[Message, ...]) -> tuple[str, int]:
    """The text of the leading system messages, and how many there are."""
    lead = 0
    while lead < len(messages) and messages[lead].role == "system":
        lead += 1
    return "\n\n".join(m.text for m in messages[:lead] if m.text), lead


def encode_messages(messages: tuple[Message, ...], images_ok: bool) -> tuple[str, list[dict[str, Any]]]:
    """The ``system`` text and the ``messages`` list: same-role neighbours merged, the first one a user turn."""
    system, lead = _system(messages)
    out: list[dict[str, Any]] = []
    for message in messages[lead:]:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message, images_ok)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if not out or out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "Continue."}]})
    return system, out


def _encode_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}


_TOOLS = ToolsJSON(_encode_tool)
_BLOCKS = {ok: MessagesJSON(partial(_blocks, images_ok=ok)) for ok in (False, True)}
_CONTINUE = '{"type":"text","text":"Continue."}'


def _messages_json(messages: tuple[Message, ...], images_ok: bool) -> str:
    """``encode_messages``'s list as JSON, spliced from each message's blocks encoded once (``_body``)."""
    lead = _system(messages)[1]
    turns: list[tuple[str, list[str]]] = []
    for message, text in zip(messages[lead:], _BLOCKS[images_ok].pieces(messages[lead:]), strict=True):
        role = "assistant" if message.role == "assistant" else "user"
        if text == "[]":
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].append(text[1:-1])
        else:
            turns.append((role, [text[1:-1]]))
    if not turns or turns[0][0] != "user":
        turns.insert(0, ("user", [_CONTINUE]))
    return "[" + ",".join(f'{{"role":"{role}","content":[{",".join(blocks)}]}}' for role, blocks in turns) + "]"


def encode_request(
    model: ModelSpec, request: ModelRequest, *, stream: bool, tools: bool = True, messages: bool = True
) -> dict[str, Any]:
    """The Messages API body for ``request`` (``tools=False``, ``messages=False``: without the ``tools`` list
    and the ``messages``, which ``encode_body`` adds as JSON encoded once)."""
    body: dict[str, Any] = {"model": model.id, "max_tokens": request.max_tokens or model.max_tokens}
    if messages:
        system, encoded = encode_messages(request.messages, "image" in model.input)
    else:
        system, encoded = _system(request.messages)[0], []
    if system:
        body["system"] = system
    if messages:
        body["messages"] = encoded
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if request.tools:
        if tools:
            body["tools"] = [_encode_tool(t) for t in request.tools]
        choice = request.tool_choice
        body["tool_choice"] = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}.get(
            choice, {"type": "tool", "name": choice}
        )
    if stream:
        body["stream"] = True
    return body


def encode_body(model: ModelSpec, request: ModelRequest, *, stream: bool) -> bytes:
    """``encode_request`` as the JSON bytes sent, its tool definitions encoded once per distinct set and each
    message's blocks once (``_body``)."""
    body = encode_request(model, request, stream=stream, tools=False, messages=False)
    messages = _messages_json(request.messages, "image" in model.input)
    if request.tools:
        return json_body(body, messages=messages, tools=_TOOLS.text(request.tools))
    return json_body(body, messages=messages)


def _usage(usage: Any) -> tuple[int | None, int | None]:
    if not isinstance(usage, dict):
        return None, None
    inputs = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    counted = [n for n in inputs if isinstance(n, int)]
    output = usage.get("output_tokens")
    return (sum(counted) if isinstance(inputs[0], int) else None, output if isinstance(output, int) else None)


class AnthropicMessagesClient:
    """One Anthropic Messages provider."""

    def __init__(self, provider: ProviderConfig, http: httpx.AsyncClient, estimator: Estimator):
        self.provider = provider
        self.http = http
        self.estimator = estimator
        base = (provider.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.url = join_url(base, "messages" if base.endswith("/v1") else "v1/messages")
        self.headers = {
            "content-type": "application/json",
            "anthropic-version": str(provider.options.get("anthropic_version", "2023-06-01")),
            **provider.headers,
        }
        if provider.api_key:
            self.headers["x-api-key"] = provider.api_key

    async def generate(self, model: ModelSpec, request: ModelRequest) -> ModelResult:
        """One non-streaming call."""
        name = f"{self.provider.id}:{model.id}"
        data = await post_json(self.http, self.url, encode_body(model, request, stream=False), self.headers, name)
        content = data.get("content")
        if not isinstance(content, list):
            raise malformed(name, "the answer has no content list")
        assembler = StreamAssembler(name, request, self.estimator)
        calls = 0
        for block in content:
            if not isinstance(block, dict):
                raise malformed(name, "a content block is not an object")
            if block.get("type") == "text":
                assembler.add_text(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
                assembler.add_tool_delta(ToolCallDelta(calls, block.get("id"), str(block.get("name", "")), arguments))
                calls += 1
        assembler.finish_reason = _FINISH.get(str(data.get("stop_reason")), "other")
        assembler.input_tokens, assembler.output_tokens = _usage(data.get("usage"))
        return assembler.result()

    async def stream(self, model: ModelSpec, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """One streaming call: text and tool-call deltas, then ``StreamDone``."""
        name = f"{self.provider.id}:{model.id}"
        assembler = StreamAssembler(name, request, self.estimator)
        tool_index: dict[int, int] = {}  # content-block index -> tool-call ordinal
        done = False
        body = encode_body(model, request, stream=True)
        events = post_sse(self.http, self.url, body, self.headers, name)
        async for event in events:
            data = parse_event_json(event, name)
            kind = data.get("type", event.event)
            if kind == "message_stop":
                done = True
                break
            for delta in _deltas(kind, data, assembler, tool_index):
                yield delta
        await finish_stream(events)
        if not done:
            raise stream_cut(name)
        yield StreamDone(assembler.result())

    async def aclose(self) -> None:
        """Nothing of its own to release (the gateway closes the shared httpx client)."""


def _deltas(
    kind: str, data: dict[str, Any], assembler: StreamAssembler, tool_index: dict[int, int]
) -> list[TextDelta | ToolCallDelta]:
    """The deltas of one stream event, recorded into ``assembler``."""
    out: list[TextDelta | ToolCallDelta] = []
    raw_index = data.get("index")
    block_index = raw_index if isinstance(raw_index, int) else 0
    if kind == "message_start":
        message = data.get("message") or {}
        assembler.input_tokens, assembler.output_tokens = _usage(message.get("usage"))
    elif kind == "content_block_start":
        block = data.get("content_block") or {}
        if block.get("type") == "text" and block.get("text"):
            out.append(TextDelta(str(block["text"])))
        elif block.get("type") == "tool_use":
            tool_index[block_index] = len(tool_index)
            start = json.dumps(block["input"], ensure_ascii=False) if block.get("input") else ""
            out.append(ToolCallDelta(tool_index[block_index], block.get("id"), str(block.get("name", "")), start))
    elif kind == "content_block_delta":
        delta = data.get("delta") or {}
        if delta.get("type") == "text_delta" and delta.get("text"):
            out.append(TextDelta(str(delta["text"])))
        elif delta.get("type") == "input_json_delta" and block_index in tool_index:
            out.append(ToolCallDelta(tool_index[block_index], arguments=str(delta.get("partial_json", ""))))
    elif kind == "message_delta":
        stop = (data.get("delta") or {}).get("stop_reason")
        if stop:
            assembler.finish_reason = _FINISH.get(str(stop), "other")
        inputs, output = _usage(data.get("usage"))
        assembler.output_tokens = output if output is not None else assembler.output_tokens
        assembler.input_tokens = inputs if inputs is not None else assembler.input_tokens
    for piece in out:
        if isinstance(piece, TextDelta):
            assembler.add_text(piece.text)
        else:
            assembler.add_tool_delta(piece)
    return out


class AnthropicMessagesAPI(ModelAPI):
    """The ``anthropic-messages`` provider API."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "properties": {"anthropic_version": {"type": "string"}},
        "additionalProperties": False,
    }
    needs_base_url: ClassVar[bool] = False

    def __init__(self, estimator: Estimator = estimate_tokens):
        self.estimator = estimator

    def create(self, provider: ProviderConfig, http: httpx.AsyncClient) -> AnthropicMessagesClient:
        """A client for ``provider``."""
        return AnthropicMessagesClient(provider, http, self.estimator)
