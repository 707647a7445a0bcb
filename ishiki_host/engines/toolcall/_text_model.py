"""The model a text tool-call protocol gives the agent: tools rendered into the prompt, calls read from text.

``TextProtocolModel`` wraps the profile's model. Each request is rendered for a model without native tools
(``render_request``: the catalogue in the system prompt, earlier calls and results as the protocol's own text)
and sent with ``tools=()``; the answer's text is parsed into a standard ``ModelResult`` whose ``tool_calls``
the agent runs like native ones, and whose text is the prose around the blocks. An answer of which nothing
could be run (unreadable, or every call dropped) keeps its text as written, so the history shows the model
what its note is about. ``stream`` does the same over streamed chunks: the ``xml`` protocol reads them
with its incremental parser (text outside blocks and each call are yielded as soon as they are certain), the
``json`` protocol, whose one block is only certain at the end, yields the parsed answer when the stream ends.

The wrapper never changes the wrapped model. What it needs of its engine (``CallSite``): the step the call
belongs to and an id prefix (so call ids are unique across turns), and somewhere to report the parsed answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ishiki_host.core.model import ModelRequest, ModelResult, StreamDone, TextDelta, ToolCallDelta
from ishiki_host.engines.toolcall import json_protocol, xml_protocol
from ishiki_host.engines.toolcall._answer import call_arguments
from ishiki_host.engines.toolcall._xml_stream import TextEvent, ToolCallEvent, ToolCallStreamParser
from ishiki_host.errors import ModelBadRequest

if TYPE_CHECKING:
    from ishiki_host.core.messages import ToolCall
    from ishiki_host.core.model import LanguageModel, StreamEvent
    from ishiki_host.engines.toolcall._answer import ParsedAnswer
    from ishiki_host.engines.toolcall._xml_stream import XmlEvent

__all__ = ["JSON", "XML", "CallSite", "TextProtocol", "TextProtocolModel"]


class _Parse(Protocol):
    def __call__(self, text: str, tools: Collection[str] | None, *, step: int, id_prefix: str) -> ParsedAnswer: ...


@dataclass(frozen=True, slots=True)
class TextProtocol:
    """A text protocol as the wrapper uses it: how to render a request, and how to read an answer."""

    name: str
    render_request: Callable[[ModelRequest], ModelRequest]
    parse_answer: _Parse
    incremental: bool = False


JSON = TextProtocol("json", json_protocol.render_request, json_protocol.parse_answer)
XML = TextProtocol("xml", xml_protocol.render_request, xml_protocol.parse_answer, incremental=True)


class CallSite(Protocol):
    """What the wrapper asks of its engine around one model call."""

    def call_ids(self) -> tuple[int, str]:
        """The ``step`` and ``id_prefix`` for the call ids of the answer about to be parsed."""
        ...

    def answered(self, answer: ParsedAnswer) -> None:
        """The parsed answer of the call (its notes go to the model at its next step)."""
        ...


class TextProtocolModel:
    """The profile's model behind a text protocol (see the module docstring)."""

    def __init__(self, inner: LanguageModel, protocol: TextProtocol, site: CallSite):
        self.inner = inner
        self.protocol = protocol
        self.site = site

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.inner.name

    async def generate(self, request: ModelRequest) -> ModelResult:
        """Render, call the wrapped model without native tools, and parse its answer."""
        result = await self.inner.generate(self.protocol.render_request(request))
        step, prefix = self.site.call_ids()
        answer = self.protocol.parse_answer(result.text, _offered(request), step=step, id_prefix=prefix)
        return self._result(answer, result)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Like ``generate``, as events; the last one is ``StreamDone`` with the parsed result."""
        step, prefix = self.site.call_ids()
        reader = _StreamReader(self.protocol, _offered(request), step, prefix)
        events = self.inner.stream(self.protocol.render_request(request))
        try:
            async for event in events:
                if isinstance(event, TextDelta):
                    for out in reader.feed(event.text):
                        yield out
                elif isinstance(event, StreamDone):
                    answer, last = reader.finish(event.result.text)
                    for out in last:
                        yield out
                    yield StreamDone(self._result(answer, event.result))
                    return
        finally:
            aclose = getattr(events, "aclose", None)  # an async generator: end it now, not when collected
            if aclose is not None:
                await aclose()
        raise ModelBadRequest("stream ended without a result", model=self.name)

    def _result(self, answer: ParsedAnswer, result: ModelResult) -> ModelResult:
        self.site.answered(answer)
        if answer.tool_calls:
            return ModelResult(answer.text, answer.tool_calls, "tool_calls", result.usage, result.model)
        # Nothing could be run: the history keeps the answer as written, so the model sees what the note is about.
        text = result.text if answer.dropped or not answer.ok else answer.text
        return ModelResult(text, (), result.finish_reason, result.usage, result.model)


def _offered(request: ModelRequest) -> frozenset[str]:
    """The function names the model may call in this request."""
    return frozenset() if request.tool_choice == "none" else frozenset(tool.name for tool in request.tools)


class _StreamReader:
    """Turns the wrapped model's text deltas into the protocol's events: text outside blocks, complete calls."""

    def __init__(self, protocol: TextProtocol, offered: frozenset[str], step: int, prefix: str):
        self.protocol = protocol
        self.offered = offered
        self.step = step
        self.prefix = prefix
        self.parser = ToolCallStreamParser(offered, step=step, id_prefix=prefix) if protocol.incremental else None
        self.fed: list[str] = []
        self.calls = 0

    def feed(self, text: str) -> list[StreamEvent]:
        """Events the chunk made certain (none for a protocol read only at the end)."""
        self.fed.append(text)
        return self._deltas(self.parser.feed(text)) if self.parser is not None else []

    def finish(self, full: str) -> tuple[ParsedAnswer, list[StreamEvent]]:
        """The parsed answer and the last events; ``full`` is the stream result's text (the deltas, normally)."""
        fed = "".join(self.fed)
        text = full if len(full) > len(fed) and full.startswith(fed) else fed or full
        if self.parser is None:
            answer = self.protocol.parse_answer(text, self.offered, step=self.step, id_prefix=self.prefix)
            head: list[StreamEvent] = [TextDelta(answer.text)] if answer.text else []
            return answer, head + [_call_delta(i, call) for i, call in enumerate(answer.tool_calls)]
        events = self.parser.feed(text[len(fed) :]) + self.parser.finish()
        return self.parser.answer(), self._deltas(events)

    def _deltas(self, events: list[XmlEvent]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for event in events:
            if isinstance(event, TextEvent):
                out.append(TextDelta(event.text))
            elif isinstance(event, ToolCallEvent):
                out.append(_call_delta(self.calls, event.call))
                self.calls += 1
        return out


def _call_delta(index: int, call: ToolCall) -> ToolCallDelta:
    return ToolCallDelta(index, call.id, call.name, json.dumps(call_arguments(call), ensure_ascii=False))
