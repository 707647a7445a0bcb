"""Building ``ModelResult``s from provider pieces: tool-call arguments, streamed deltas, usage.

Shared by every adapter so that a tool call whose arguments are not a JSON object becomes a ``ToolCall`` with
``parse_error`` (the agent answers it with an error result) in exactly one way, and usage the provider did not
report is estimated and flagged in exactly one way.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ishiki_host.core.messages import ToolCall
from ishiki_host.core.model import FinishReason, ModelRequest, ModelResult, ToolCallDelta, Usage
from ishiki_host.core.tokens import Estimator, estimate_messages_tokens, estimate_tokens

__all__ = ["StreamAssembler", "make_tool_call", "new_call_id", "resolve_usage"]

_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def new_call_id() -> str:
    """An id for a tool call whose provider sent none."""
    return f"call_{uuid.uuid4().hex[:24]}"


def make_tool_call(call_id: str | None, name: str, arguments: str | Mapping[str, Any] | None) -> ToolCall:
    """A ``ToolCall`` from raw arguments: a JSON object text or mapping parses; anything else sets ``parse_error``.

    Empty arguments mean ``{}`` (models call argument-less tools that way).
    """
    call_id = call_id or new_call_id()
    if isinstance(arguments, Mapping):
        return ToolCall(call_id, name, dict(arguments))
    raw = arguments or ""
    if not raw.strip():
        return ToolCall(call_id, name, {})
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        return ToolCall(call_id, name, {}, raw_arguments=raw, parse_error=f"arguments are not valid JSON: {exc}")
    if not isinstance(parsed, dict):
        kind = "null" if parsed is None else _JSON_TYPES.get(type(parsed), type(parsed).__name__)
        return ToolCall(
            call_id, name, {}, raw_arguments=raw, parse_error=f"arguments must be a JSON object, not {kind}"
        )
    return ToolCall(call_id, name, parsed)


def resolve_usage(
    request: ModelRequest,
    text: str,
    tool_calls: tuple[ToolCall, ...],
    input_tokens: int | None,
    output_tokens: int | None,
    estimator: Estimator = estimate_tokens,
) -> Usage:
    """The provider's numbers when it gave both; otherwise the missing ones estimated and the usage flagged."""
    if input_tokens is not None and output_tokens is not None:
        return Usage(input_tokens, output_tokens)
    if input_tokens is None:
        input_tokens = estimate_messages_tokens(request.messages, request.tools, estimator)
    if output_tokens is None:
        output_tokens = estimator(text) + sum(
            estimator(call.name) + estimator(call.raw_arguments or json.dumps(dict(call.arguments)))
            for call in tool_calls
        )
    return Usage(input_tokens, output_tokens, estimated=True)


@dataclass
class _PendingCall:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAssembler:
    """Collects streamed text and tool-call pieces into the final ``ModelResult``.

    Tool-call pieces are grouped by ``index``; the first piece usually carries ``id`` and ``name``, later ones
    carry argument fragments, but any piece may carry any field.
    """

    def __init__(self, model: str, request: ModelRequest, estimator: Estimator = estimate_tokens):
        self.model = model
        self.request = request
        self.estimator = estimator
        self._text: list[str] = []
        self._calls: dict[int, _PendingCall] = {}
        self.finish_reason: FinishReason | None = None
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def add_text(self, text: str) -> None:
        """Record a piece of text."""
        self._text.append(text)

    def add_tool_delta(self, delta: ToolCallDelta) -> None:
        """Record a piece of a tool call."""
        pending = self._calls.setdefault(delta.index, _PendingCall())
        if delta.id:
            pending.id = delta.id
        if delta.name and not pending.name:
            pending.name = delta.name  # some servers repeat the name on every piece
        pending.arguments.append(delta.arguments)

    @property
    def has_tool_calls(self) -> bool:
        """Whether any tool-call piece arrived."""
        return bool(self._calls)

    def result(self) -> ModelResult:
        """The assembled result (tool calls in index order; usage resolved or estimated)."""
        calls = tuple(
            make_tool_call(pending.id, pending.name, "".join(pending.arguments))
            for _, pending in sorted(self._calls.items())
        )
        text = "".join(self._text)
        finish = self.finish_reason or "stop"
        if calls and finish == "stop":
            finish = "tool_calls"  # some servers (Ollama, llama.cpp) say "stop" after tool calls
        usage = resolve_usage(self.request, text, calls, self.input_tokens, self.output_tokens, self.estimator)
        return ModelResult(text=text, tool_calls=calls, finish_reason=finish, usage=usage, model=self.model)
