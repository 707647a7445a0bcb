"""The ``LanguageModel`` protocol: the one seam between the agent and whatever answers it.

A model takes a ``ModelRequest`` and returns a ``ModelResult`` (``generate``), or yields ``StreamEvent``s whose
last one is a ``StreamDone`` carrying the assembled result (``stream``). Gateway models, toolcall-engine
wrappers and test stand-ins all speak it. Errors are ``ishiki_host.errors.ModelError`` subclasses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.errors import ModelBadRequest
from ishiki_host.jsontypes import Json

__all__ = [
    "FinishReason",
    "LanguageModel",
    "ModelRequest",
    "ModelResult",
    "Priority",
    "StreamDone",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "generate_by_stream",
]

Priority = Literal["interactive", "background"]
FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "other"]
ToolChoice = Literal["auto", "none", "required"] | str
"""``auto``, ``none``, ``required``, or the name of the one tool the model must call."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as a model sees it: name, description and the JSON Schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Json] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model call.

    ``priority`` orders calls in the gateway's scheduler: ``interactive`` (a turn a person started) goes
    before ``background`` (summarizer, heartbeats, compaction, judges).
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = "auto"
    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    priority: Priority = "interactive"


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one call; ``estimated`` when the provider gave no numbers and the host counted."""

    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False

    def to_dict(self) -> dict[str, Json]:
        """JSON form."""
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "estimated": self.estimated}


@dataclass(frozen=True, slots=True)
class ModelResult:
    """What a model answered. ``model`` names who answered (``provider:modelId``) when known."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: FinishReason = "stop"
    usage: Usage = field(default_factory=Usage)
    model: str | None = None

    def message(self) -> Message:
        """The assistant message this result becomes."""
        return Message.assistant(self.text, self.tool_calls)


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of streamed text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a streamed tool call; ``index`` groups pieces of one call."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class StreamDone:
    """The last event of every stream: the assembled result."""

    result: ModelResult


StreamEvent = TextDelta | ToolCallDelta | StreamDone


@runtime_checkable
class LanguageModel(Protocol):
    """Anything that answers a ``ModelRequest``."""

    @property
    def name(self) -> str:
        """A display name (``provider:modelId`` or a group name)."""
        ...

    async def generate(self, request: ModelRequest) -> ModelResult:
        """Answer the request in one piece."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Answer the request as events; the last one is ``StreamDone``."""
        ...


async def generate_by_stream(model: LanguageModel, request: ModelRequest) -> ModelResult:
    """Run ``model.stream`` to its end and return the assembled result (for models that only stream)."""
    async for event in model.stream(request):
        if isinstance(event, StreamDone):
            return event.result
    raise ModelBadRequest("stream ended without a result", model=model.name)
