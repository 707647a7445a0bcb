"""In-process stand-ins for ``LanguageModel``: no HTTP, for tests of the agent, engines and hooks.

``FunctionModel(fn)`` answers each request with ``fn(request)`` (sync or async; it may raise a
``ModelError``). ``ScriptedModel([...])`` answers the calls in order from a script. Both record every
request in ``requests`` and implement ``stream`` too (text in small deltas, tool-call arguments in two
pieces, then ``StreamDone``). ``tool_call`` and ``reply`` build results tersely; ``tool_call`` with a string
parses it the way a provider adapter does, so ``tool_call("x", "{")`` is a call with a ``parse_error``.
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any

from ishiki_host.core.messages import ToolCall
from ishiki_host.core.model import (
    ModelRequest,
    ModelResult,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from ishiki_host.errors import ModelBadRequest, ModelError

__all__ = ["FunctionModel", "ModelFunction", "ScriptItem", "ScriptedModel", "reply", "stream_events", "tool_call"]

ModelFunction = Callable[[ModelRequest], ModelResult | Awaitable[ModelResult]]
ScriptItem = ModelResult | str | ModelError | ModelFunction
"""A result, a text answer, an error to raise, or a function of the request."""

_call_ids = itertools.count(1)


def tool_call(name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str | None = None) -> ToolCall:
    """A tool call; string ``arguments`` are parsed like a provider's, keeping a ``parse_error`` on failure."""
    call_id = id or f"call_{next(_call_ids)}"
    if not isinstance(arguments, str):
        return ToolCall(call_id, name, dict(arguments or {}))
    try:
        parsed = json.loads(arguments)
    except ValueError as exc:
        return ToolCall(call_id, name, {}, raw_arguments=arguments, parse_error=f"invalid JSON: {exc}")
    if not isinstance(parsed, dict):
        error = f"expected a JSON object, got {type(parsed).__name__}"
        return ToolCall(call_id, name, {}, raw_arguments=arguments, parse_error=error)
    return ToolCall(call_id, name, parsed)


def reply(text: str = "", *calls: ToolCall, usage: Usage | None = None, model: str | None = None) -> ModelResult:
    """A model result with ``text`` and ``calls`` (finish reason ``tool_calls`` when there are calls)."""
    return ModelResult(
        text=text,
        tool_calls=tuple(calls),
        finish_reason="tool_calls" if calls else "stop",
        usage=usage or Usage(),
        model=model,
    )


def stream_events(result: ModelResult, *, chunk: int = 8) -> list[StreamEvent]:
    """The events a streaming provider would send for ``result``."""
    events: list[StreamEvent] = [TextDelta(result.text[i : i + chunk]) for i in range(0, len(result.text), chunk)]
    for index, call in enumerate(result.tool_calls):
        raw = call.raw_arguments if call.parse_error is not None else json.dumps(dict(call.arguments))
        raw = raw or ""
        half = len(raw) // 2
        events.append(ToolCallDelta(index, id=call.id, name=call.name, arguments=raw[:half]))
        events.append(ToolCallDelta(index, arguments=raw[half:]))
    events.append(StreamDone(result))
    return events


class FunctionModel:
    """A model whose answers come from ``fn(request)``."""

    def __init__(self, fn: ModelFunction, *, name: str = "test:function"):
        self.fn = fn
        self.requests: list[ModelRequest] = []
        self._name = name

    @property
    def name(self) -> str:
        """The display name given at construction."""
        return self._name

    async def generate(self, request: ModelRequest) -> ModelResult:
        """Record ``request`` and answer it with ``fn``."""
        self.requests.append(request)
        result = self.fn(request)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, ModelResult):
            raise TypeError(f"{self._name}: the model function returned {type(result).__name__}, not ModelResult")
        return result

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """``generate``, delivered as stream events."""
        result = await self.generate(request)
        for event in stream_events(result):
            yield event


class ScriptedModel(FunctionModel):
    """A model that answers its calls in order from ``script``; an exhausted script is a ``ModelBadRequest``."""

    def __init__(self, script: Iterable[ScriptItem], *, name: str = "test:scripted"):
        super().__init__(self._next, name=name)
        self.script = list(script)
        self._position = 0

    @property
    def remaining(self) -> int:
        """How many scripted answers are left."""
        return len(self.script) - self._position

    async def _next(self, request: ModelRequest) -> ModelResult:
        if self._position >= len(self.script):
            message = (
                f"{self.name}: the script has no answer for call {self._position + 1} ({len(self.script)} scripted)"
            )
            raise ModelBadRequest(message, model=self.name)
        item = self.script[self._position]
        self._position += 1
        if isinstance(item, ModelError):
            raise item
        if isinstance(item, str):
            return reply(item)
        if isinstance(item, ModelResult):
            return item
        result = item(request)
        return await result if inspect.isawaitable(result) else result
