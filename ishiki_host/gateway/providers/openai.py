"""``openai-completions``: the OpenAI Chat Completions protocol (OpenAI, Ollama, vLLM, llama.cpp, DeepSeek,
OpenRouter, LM Studio, ...).

``base_url`` is the API root including its version (``https://api.openai.com/v1``, ``http://127.0.0.1:11434/v1``);
requests go to ``{base_url}/chat/completions``, and embeddings (``embed``, for ``memory.embeddings``) to
``{base_url}/embeddings``. Provider options: ``max_tokens_field`` (``max_tokens``, the
default, or ``max_completion_tokens`` for OpenAI's reasoning models) and ``stream_usage`` (default true: ask
for token usage at the end of a stream; turn off for servers that reject ``stream_options``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

import httpx

from ishiki_host.config.models import ModelSpec, ProviderConfig
from ishiki_host.core.messages import Message, TextPart
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

__all__ = ["OpenAICompletionsAPI", "OpenAICompletionsClient", "encode_body", "encode_request", "parse_embeddings"]

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}
_IMAGE_REFUSED = "[an image was left out: this model does not accept images]"


def _user_content(message: Message, images_ok: bool) -> str | list[dict[str, Any]]:
    if not message.images:
        return message.text
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                parts.append({"type": "text", "text": part.text})
        elif images_ok:
            parts.append({"type": "image_url", "image_url": {"url": part.url}})
        else:
            parts.append({"type": "text", "text": _IMAGE_REFUSED})
    return parts


def _encode_message(message: Message, images_ok: bool) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.text}
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    # Arguments that failed to parse go back as {}: many servers re-parse history and would
                    # refuse the whole request; the tool result already told the model what was wrong.
                    "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments), ensure_ascii=False)},
                }
                for call in message.tool_calls
            ]
        return out
    if message.role == "user":
        return {"role": "user", "content": _user_content(message, images_ok)}
    return {"role": message.role, "content": message.text}


def _encode_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)},
    }


_TOOLS = ToolsJSON(_encode_tool)
_MESSAGES = {ok: MessagesJSON(partial(_encode_message, images_ok=ok)) for ok in (False, True)}


def encode_request(
    model: ModelSpec,
    request: ModelRequest,
    *,
    stream: bool,
    options: Mapping[str, Any],
    tools: bool = True,
    messages: bool = True,
) -> dict[str, Any]:
    """The Chat Completions body for ``request`` (``tools=False``, ``messages=False``: without the ``tools``
    list and the ``messages``, which ``encode_body`` adds as JSON encoded once)."""
    images_ok = "image" in model.input
    body: dict[str, Any] = {"model": model.id}
    if messages:
        body["messages"] = [_encode_message(m, images_ok) for m in request.messages]
    body["stream"] = stream
    body[str(options.get("max_tokens_field", "max_tokens"))] = request.max_tokens or model.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop:
        body["stop"] = list(request.stop)
    if request.tools:
        if tools:
            body["tools"] = [_encode_tool(t) for t in request.tools]
        choice = request.tool_choice
        body["tool_choice"] = (
            choice if choice in ("auto", "none", "required") else {"type": "function", "function": {"name": choice}}
        )
    if stream and options.get("stream_usage", True):
        body["stream_options"] = {"include_usage": True}
    return body


def encode_body(model: ModelSpec, request: ModelRequest, *, stream: bool, options: Mapping[str, Any]) -> bytes:
    """``encode_request`` as the JSON bytes sent, its tool definitions encoded once per distinct set and each
    message once (``_body``)."""
    body = encode_request(model, request, stream=stream, options=options, tools=False, messages=False)
    messages = _MESSAGES["image" in model.input].text(request.messages)
    if request.tools:
        return json_body(body, messages=messages, tools=_TOOLS.text(request.tools))
    return json_body(body, messages=messages)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _usage_numbers(usage: Any) -> tuple[int | None, int | None]:
    if not isinstance(usage, dict):
        return None, None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return (prompt if isinstance(prompt, int) else None, completion if isinstance(completion, int) else None)


def _arguments_text(function: dict[str, Any]) -> str:
    arguments = function.get("arguments")
    if arguments is None:
        return ""
    # Some servers (Ollama's native shape) send arguments as an object instead of JSON text.
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _finish(value: Any) -> FinishReason | None:
    return _FINISH.get(str(value), "other") if value else None


def _first_choice(data: dict[str, Any], name: str) -> dict[str, Any]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise malformed(name, "the answer has no choices")
    return choices[0]


def parse_embeddings(data: dict[str, Any], count: int, name: str) -> list[list[float]]:
    """The vectors of an ``/embeddings`` answer in input order (by ``index``); ``malformed`` unless there is
    exactly one list of numbers per input, all of one length."""
    items = data.get("data")
    if not isinstance(items, list) or len(items) != count:
        raise malformed(name, f"expected {count} embeddings, got {len(items) if isinstance(items, list) else 0}")
    vectors: list[list[float] | None] = [None] * count
    for position, item in enumerate(items):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or vectors[index] is not None:
            raise malformed(name, f"embedding {position} has a missing or repeated index")
        if not isinstance(vector, list) or not vector or not all(_is_number(x) for x in vector):
            raise malformed(name, f"embedding {index} is not a list of numbers")
        vectors[index] = [float(x) for x in vector]
    done = [v for v in vectors if v is not None]
    if len({len(v) for v in done}) != 1:
        raise malformed(name, "the embeddings of one answer have different lengths")
    return done


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class OpenAICompletionsClient:
    """One OpenAI-compatible provider."""

    def __init__(self, provider: ProviderConfig, http: httpx.AsyncClient, estimator: Estimator):
        self.provider = provider
        self.http = http
        self.estimator = estimator
        self.url = join_url(provider.base_url or "", "chat/completions")
        self.embeddings_url = join_url(provider.base_url or "", "embeddings")
        self.headers = {"content-type": "application/json", **provider.headers}
        if provider.api_key:
            self.headers["authorization"] = f"Bearer {provider.api_key}"

    def _name(self, model: ModelSpec) -> str:
        return f"{self.provider.id}:{model.id}"

    async def generate(self, model: ModelSpec, request: ModelRequest) -> ModelResult:
        """One non-streaming call."""
        name = self._name(model)
        body = encode_body(model, request, stream=False, options=self.provider.options)
        data = await post_json(self.http, self.url, body, self.headers, name)
        choice = _first_choice(data, name)
        message = choice.get("message")
        if not isinstance(message, dict):
            raise malformed(name, "the first choice has no message")
        assembler = StreamAssembler(name, request, self.estimator)
        assembler.add_text(_content_text(message.get("content")))
        for index, raw in enumerate(message.get("tool_calls") or ()):
            if not isinstance(raw, dict):
                raise malformed(name, f"tool call {index} is not an object")
            function = raw.get("function") or {}
            name_ = str(function.get("name") or "")
            assembler.add_tool_delta(ToolCallDelta(index, raw.get("id"), name_, _arguments_text(function)))
        assembler.finish_reason = _finish(choice.get("finish_reason"))
        assembler.input_tokens, assembler.output_tokens = _usage_numbers(data.get("usage"))
        return assembler.result()

    async def stream(self, model: ModelSpec, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """One streaming call: text and tool-call deltas, then ``StreamDone``."""
        name = self._name(model)
        body = encode_body(model, request, stream=True, options=self.provider.options)
        assembler = StreamAssembler(name, request, self.estimator)
        done = False
        events = post_sse(self.http, self.url, body, self.headers, name)
        async for event in events:
            if event.data.strip() == "[DONE]":
                done = True
                break
            chunk = parse_event_json(event, name)
            for delta in self._deltas(chunk, assembler):
                yield delta
        await finish_stream(events)
        if not done and assembler.finish_reason is None:
            raise stream_cut(name)
        yield StreamDone(assembler.result())

    def _deltas(self, chunk: dict[str, Any], assembler: StreamAssembler) -> list[TextDelta | ToolCallDelta]:
        """The deltas of one chunk, recorded into ``assembler``."""
        prompt, completion = _usage_numbers(chunk.get("usage"))
        if prompt is not None:
            assembler.input_tokens, assembler.output_tokens = prompt, completion
        out: list[TextDelta | ToolCallDelta] = []
        choices = chunk.get("choices") or []
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        delta = choice.get("delta") or {}
        text = _content_text(delta.get("content"))
        if text:
            assembler.add_text(text)
            out.append(TextDelta(text))
        for position, raw in enumerate(delta.get("tool_calls") or ()):
            if not isinstance(raw, dict):
                raise malformed(assembler.model, "a streamed tool call is not an object")
            function = raw.get("function") or {}
            index = raw.get("index", position)
            piece = ToolCallDelta(
                index=index if isinstance(index, int) else position,
                id=raw.get("id"),
                name=function.get("name"),
                arguments=_arguments_text(function),
            )
            assembler.add_tool_delta(piece)
            out.append(piece)
        if choice.get("finish_reason"):
            assembler.finish_reason = _finish(choice["finish_reason"])
        return out

    async def embed(self, model: ModelSpec, texts: Sequence[str]) -> list[list[float]]:
        """One ``/embeddings`` call: a vector per text, in order."""
        name = self._name(model)
        data = await post_json(
            self.http, self.embeddings_url, {"model": model.id, "input": list(texts)}, self.headers, name
        )
        return parse_embeddings(data, len(texts), name)

    async def aclose(self) -> None:
        """Nothing of its own to release (the gateway closes the shared httpx client)."""


class OpenAICompletionsAPI(ModelAPI):
    """The ``openai-completions`` provider API."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "properties": {
            "max_tokens_field": {"enum": ["max_tokens", "max_completion_tokens"]},
            "stream_usage": {"type": "boolean"},
        },
        "additionalProperties": False,
    }

    def __init__(self, estimator: Estimator = estimate_tokens):
        self.estimator = estimator

    def create(self, provider: ProviderConfig, http: httpx.AsyncClient) -> OpenAICompletionsClient:
        """A client for ``provider``."""
        return OpenAICompletionsClient(provider, http, self.estimator)
