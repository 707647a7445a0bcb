"""What a text tool-call protocol makes of a model's answer, and the pieces both protocols share.

``ParsedAnswer`` is the result of parsing one answer: the text meant as prose, the tool calls, notes for the
model (things it should know about how its answer was read) and whether the answer followed the protocol.
``CallBuilder`` turns the decoded ``(name, arguments)`` pairs into ``ToolCall``s with deterministic ids
(``<prefix>_<step>_<index>``), dropping calls to functions the catalogue does not have. ``render_history_with``
and ``render_request_with`` are the rendering both protocols share: each supplies how calls and results look.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ishiki_host.core.messages import Message, ToolCall

if TYPE_CHECKING:
    from ishiki_host.core.model import ModelRequest

__all__ = [
    "CallBuilder",
    "ParsedAnswer",
    "call_arguments",
    "fence_for",
    "render_history_with",
    "render_request_with",
    "result_text",
    "with_system_section",
]


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """One model answer, read through a text protocol.

    - ``text``: the prose outside the protocol's blocks (stripped); when ``ok`` is false in the JSON protocol,
      the whole answer as it was written.
    - ``tool_calls``: the calls to run, in order, ids assigned; empty with ``ok`` true means the turn may end.
    - ``notes``: sentences for the model about how its answer was read (a dropped unknown function, a repaired
      block, why the answer could not be read). The engine shows them to the model in its next step.
    - ``ok``: whether the answer followed the protocol. False marks text that could not be read; ``notes``
      then says why.
    - ``thoughts``: the model's reasoning when the protocol carries it (the JSON ``thoughts`` value, or the
      text of ``<think>`` blocks), else ``None``. Never shown to anyone.
    - ``dropped``: how many calls the model asked for were not kept (unknown function, no name).
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    notes: tuple[str, ...] = ()
    ok: bool = True
    thoughts: Any = None
    dropped: int = 0

    @property
    def ends_turn(self) -> bool:
        """True when the answer was read and asked for no call at all (a dropped call does not end a turn)."""
        return self.ok and not self.tool_calls and not self.dropped

    def feedback(self) -> str | None:
        """The notes as one message for the model, or ``None`` when there is nothing to tell it."""
        if not self.notes:
            return None
        return "\n".join(f"- {note}" for note in self.notes)


class CallBuilder:
    """Numbers calls and drops unknown ones, collecting notes as it goes.

    ``tools`` is the set of function names on offer; ``None`` accepts any name (used when the caller checks
    names itself). Ids are ``f"{id_prefix}_{step}_{index}"`` where ``index`` counts accepted calls from 0.
    """

    def __init__(self, tools: Collection[str] | None, *, step: int = 0, id_prefix: str = "call"):
        self.tools = None if tools is None else frozenset(tools)
        self.step = step
        self.id_prefix = id_prefix
        self.calls: list[ToolCall] = []
        self.notes: list[str] = []
        self.dropped = 0

    def note(self, text: str) -> None:
        """Add a note for the model, once."""
        if text not in self.notes:
            self.notes.append(text)

    def drop(self, note: str) -> None:
        """Count a call that is not kept, and tell the model why."""
        self.dropped += 1
        self.note(note)

    def add(self, name: str, arguments: Any) -> ToolCall | None:
        """Accept a call to ``name`` with the decoded ``arguments``; ``None`` when the function is unknown."""
        if self.tools is not None and name not in self.tools:
            self.drop(self._unknown(name))
            return None
        call = self._make(name, arguments)
        self.calls.append(call)
        return call

    def add_unreadable(self, name: str, raw: str, reason: str) -> ToolCall | None:
        """Keep a call whose arguments could not be read: the agent answers it with an error, never runs it."""
        if self.tools is not None and name not in self.tools:
            self.drop(self._unknown(name))
            return None
        call_id = f"{self.id_prefix}_{self.step}_{len(self.calls)}"
        call = ToolCall(call_id, name, {}, raw_arguments=raw, parse_error=reason)
        self.calls.append(call)
        return call

    def _make(self, name: str, arguments: Any) -> ToolCall:
        call_id = f"{self.id_prefix}_{self.step}_{len(self.calls)}"
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                return ToolCall(call_id, name, {}, arguments, f"arguments are not JSON: {exc}")
        if not isinstance(arguments, dict):
            raw = json.dumps(arguments, ensure_ascii=False)
            return ToolCall(call_id, name, {}, raw, f"arguments must be an object, not {type(arguments).__name__}")
        return ToolCall(call_id, name, arguments)

    def _unknown(self, name: str) -> str:
        assert self.tools is not None
        known = sorted(self.tools)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f' Did you mean "{close[0]}"?' if close else ""
        listing = ", ".join(known) if known else "none"
        return f'There is no function "{name}"; that call was not run.{hint} Available functions: {listing}.'


def fence_for(content: str) -> str:
    """A backtick fence longer than any run of backticks inside ``content`` (at least three)."""
    longest, run = 0, 0
    for char in content:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def result_text(content: str) -> Any:
    """A tool result as a JSON value: the parsed value when the text is a JSON object or array, else the text."""
    stripped = content.strip()
    if stripped[:1] in ("{", "["):
        try:
            value: Any = json.loads(stripped)
        except ValueError:
            return content
        if isinstance(value, Mapping | list):
            return value
    return content


def with_system_section(messages: tuple[Message, ...], section: str) -> tuple[Message, ...]:
    """``messages`` with ``section`` appended to the leading system message (or a new one put first)."""
    if messages and messages[0].role == "system":
        head = messages[0].text.rstrip()
        return (Message.system(f"{head}\n\n{section}" if head else section), *messages[1:])
    return (Message.system(section), *messages)


def call_arguments(call: ToolCall) -> Any:
    """A call's arguments as the model wrote them: the raw text when they could not be read, else the object."""
    if call.parse_error is not None and call.raw_arguments is not None:
        return call.raw_arguments
    return dict(call.arguments)


def render_history_with(
    messages: Sequence[Message],
    *,
    calls: Callable[[Sequence[ToolCall]], str],
    results: Callable[[Sequence[Message]], str],
    joint: str,
) -> tuple[Message, ...]:
    """Messages as a model without native tools sees them, in a protocol's own words.

    An assistant message's tool calls become ``calls(...)`` text after its own text (joined by ``joint``);
    consecutive tool results become one user message of ``results(...)``, carrying their images. Other messages,
    among them assistant messages without calls (an end-of-turn answer, or one that could not be read and which
    the model must see as it wrote it), are unchanged.
    """
    out: list[Message] = []
    pending: list[Message] = []

    def flush() -> None:
        if pending:
            images = [image for message in pending for image in message.images]
            out.append(Message.user(results(pending), images))
            pending.clear()

    for message in messages:
        if message.role == "tool":
            pending.append(message)
            continue
        flush()
        if message.role == "assistant" and message.tool_calls:
            block, text = calls(message.tool_calls), message.text.strip()
            out.append(Message.assistant(f"{text}{joint}{block}" if text else block))
        else:
            out.append(message)
    flush()
    return tuple(out)


def render_request_with(
    request: ModelRequest,
    catalogue: Callable[..., str],
    history: Callable[[Sequence[Message]], tuple[Message, ...]],
) -> ModelRequest:
    """``request`` for a model without native tools: history rendered, the catalogue in the system prompt."""
    section = catalogue(request.tools, tool_choice=request.tool_choice)
    messages = with_system_section(history(request.messages), section)
    return replace(request, messages=messages, tools=(), tool_choice="auto")
