"""The ``json`` text tool-call protocol, for models without native tool calling.

The system prompt describes the tools (``render_catalogue``); the model answers with one fenced JSON block::

    ```json
    {"thoughts": {...}, "actions": [{"function": "send_message", "params": {"text": "hi"}}]}
    ```

``parse_answer`` reads an answer:

- prose around the block is kept as ``text`` but means nothing; a bare JSON object without a fence is read too;
- ``<think>...</think>`` reasoning is left out of ``text`` and never searched for blocks;
- when there are several blocks, the **last usable one** wins (models restate the format or show an example
  before acting; a later block that cannot be read is skipped, and the model is told);
- a broken block is repaired when that is safe (see ``_jsonscan``): trailing commas, unclosed brackets at the
  end, raw newlines in strings, single quotes; a block cut off inside a string is not;
- ``name``/``arguments``/``args``/``parameters`` are accepted for ``function``/``params``, a bare action
  object or a list of actions for the whole block, and ``params`` given as a JSON string;
- unknown functions are dropped with a note; empty ``actions`` ends the turn;
- an answer with no readable block gives ``ok=False``: the text as written and a note telling the model why.

Earlier steps are shown to the model as it would have written them (``render_history``): an assistant
message's tool calls become an action block, tool results become a user message of observations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.engines.toolcall._answer import (
    CallBuilder,
    ParsedAnswer,
    call_arguments,
    fence_for,
    render_history_with,
    render_request_with,
)
from ishiki_host.engines.toolcall._catalogue import describe_tools
from ishiki_host.engines.toolcall._json_candidates import Candidate, find_candidates
from ishiki_host.engines.toolcall._jsonscan import JsonRepairError, loads_lenient

if TYPE_CHECKING:
    from ishiki_host.core.model import ModelRequest, ToolChoice, ToolSpec

__all__ = [
    "parse_answer",
    "render_actions",
    "render_catalogue",
    "render_history",
    "render_observations",
    "render_request",
]

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
_NAME_KEYS = ("function", "name", "tool")
_PARAM_KEYS = ("params", "arguments", "args", "parameters")
_FORMAT = """\
Answer with exactly one JSON block, fenced as ```json, of this shape:

```json
{"thoughts": {"plan": "what you will do and why"}, "actions": [{"function": "<function name>", "params": {}}]}
```

- "actions" lists the functions to call now, in order; their results come back to you as observations.
- An empty "actions" list (`"actions": []`) ends your turn.
- Text outside the block is not shown to anyone. Write valid JSON: double quotes, no trailing commas."""
_FORMAT_REMINDER = 'Answer with one ```json block: {"thoughts": {...}, "actions": [{"function": ..., "params": {}}]}.'


def render_catalogue(tools: Sequence[ToolSpec], *, tool_choice: ToolChoice = "auto") -> str:
    """The system-prompt section: the answer format, then every function with its parameters."""
    parts = ["## How to act", _FORMAT]
    if tool_choice == "required":
        parts.append("You must call at least one function now.")
    elif tool_choice not in ("auto", "none"):
        parts.append(f'You must call the function "{tool_choice}" now.')
    if tools and tool_choice != "none":
        parts += ["## Functions", describe_tools(tools)]
    else:
        parts.append('No functions are available now: answer with `"actions": []`.')
    return "\n\n".join(parts)


def render_actions(calls: Sequence[ToolCall], thoughts: Any = None) -> str:
    """Calls as the fenced action block the model is asked to write (the inverse of ``parse_answer``)."""
    actions = [{"function": call.name, "params": call_arguments(call)} for call in calls]
    block: dict[str, Any] = {} if thoughts is None else {"thoughts": thoughts}
    block["actions"] = actions
    return f"```json\n{json.dumps(block, ensure_ascii=False)}\n```"


def render_observations(results: Sequence[Message]) -> str:
    """Tool results as one observation text, numbered in call order, each in its own fence."""
    sections = ["Observations (results of your actions):"]
    for number, message in enumerate(results, start=1):
        status = "error" if message.is_error else "ok"
        fence = fence_for(message.text)
        sections.append(f"#{number} {message.tool_name or 'function'}: {status}\n{fence}\n{message.text}\n{fence}")
    return "\n\n".join(sections)


def render_history(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Messages as a model without native tools sees them: action blocks and observation messages.

    Assistant messages without tool calls stay as they are (an end-of-turn answer, or an answer that could not
    be read, which the model must see as it wrote it). Consecutive tool results become one user message.
    """
    return render_history_with(messages, calls=render_actions, results=render_observations, joint="\n\n")


def render_request(request: ModelRequest) -> ModelRequest:
    """``request`` for a model without native tools: history rendered, catalogue in the system prompt."""
    return render_request_with(request, render_catalogue, render_history)


@dataclass(slots=True)
class _Reading:
    """What one candidate block was read as: actions and thoughts, or why it could not be read."""

    candidate: Candidate
    actions: list[Any] | None = None
    thoughts: Any = None
    repairs: tuple[str, ...] = ()
    error: str | None = None


def parse_answer(
    text: str,
    tools: Collection[str] | None = None,
    *,
    step: int = 0,
    id_prefix: str = "call",
) -> ParsedAnswer:
    """Read a model answer written in the JSON protocol.

    ``tools`` is the set of function names on offer (``None``: accept any name). Call ids are
    ``f"{id_prefix}_{step}_{index}"``.
    """
    readings: list[_Reading] = []
    thinking = [(m.start(), m.end()) for m in _THINK.finditer(text)]

    def accept(candidate: Candidate) -> bool:
        if any(start <= candidate.start < end for start, end in thinking):
            return False
        reading = _read(candidate)
        if reading is not None:
            readings.append(reading)
        return reading is not None and reading.error is None

    find_candidates(text, accept)
    readings = _without_swallowing(readings)
    usable = [reading for reading in readings if reading.error is None]
    if not usable:
        return ParsedAnswer(text=text, notes=(_unreadable_note(readings),), ok=False)
    chosen = usable[-1]
    builder = CallBuilder(tools, step=step, id_prefix=id_prefix)
    _add_actions(builder, chosen.actions or [])
    notes = [*_reading_notes(readings, chosen), *builder.notes]
    prose = _prose(text, chosen.candidate, thinking)
    return ParsedAnswer(prose, tuple(builder.calls), tuple(notes), True, chosen.thoughts, builder.dropped)


def _prose(text: str, chosen: Candidate, thinking: list[tuple[int, int]]) -> str:
    """The answer without the chosen block and ``<think>`` blocks; an inline bare block leaves one space."""
    cuts = sorted([(chosen.start, chosen.end), *thinking])
    pieces, pos = [], 0
    for start, end in cuts:
        pieces.append(text[pos:start].strip())
        pos = max(pos, end)
    pieces.append(text[pos:].strip())
    joint = " " if not chosen.fenced and not thinking else "\n\n"
    return joint.join(piece for piece in pieces if piece)


def _without_swallowing(readings: list[_Reading]) -> list[_Reading]:
    """Drop failed bare readings that contain a usable block: a stray ``{`` in prose ran over it."""
    usable = [r.candidate for r in readings if r.error is None]
    return [
        r
        for r in readings
        if r.error is None
        or r.candidate.fenced
        or not any(r.candidate.start < u.start and u.end <= r.candidate.end for u in usable)
    ]


def _read(candidate: Candidate) -> _Reading | None:
    """Read one block; ``None`` for a bare object that is not protocol-shaped (it is only prose)."""
    try:
        value, repairs = _decode(candidate)
    except JsonRepairError as exc:
        if not candidate.fenced and '"actions"' not in candidate.raw:
            return None
        return _Reading(candidate, error=str(exc))
    shaped = _shape(value)
    if isinstance(shaped, str):
        return None if not candidate.fenced else _Reading(candidate, error=shaped)
    actions, thoughts = shaped
    return _Reading(candidate, actions, thoughts, tuple(repairs))


def _decode(candidate: Candidate) -> tuple[Any, list[str]]:
    try:
        return loads_lenient(candidate.raw)
    except JsonRepairError:
        if candidate.fallback is None:
            raise
        return loads_lenient(candidate.fallback)


def _shape(value: Any) -> tuple[list[Any], Any] | str:
    """The actions and thoughts of a decoded block, or why it is not an action block."""
    if isinstance(value, dict):
        if "actions" in value:
            actions = value["actions"]
            if actions is None:
                actions = []
            elif isinstance(actions, dict):
                actions = [actions]
            elif not isinstance(actions, list):
                return f'"actions" must be a list, not {type(actions).__name__}'
            return actions, value.get("thoughts")
        if any(key in value for key in _NAME_KEYS):
            return [value], None
        return 'the JSON block has no "actions" list'
    if isinstance(value, list) and value and all(isinstance(a, dict) and _name_of(a) for a in value):
        return value, None
    return 'the JSON block is not an object with an "actions" list'


def _name_of(action: dict[str, Any]) -> str | None:
    for key in _NAME_KEYS:
        name = action.get(key)
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None


def _add_actions(builder: CallBuilder, actions: list[Any]) -> None:
    for number, action in enumerate(actions, start=1):
        name = _name_of(action) if isinstance(action, dict) else None
        if name is None:
            builder.drop(f"Action {number} names no function; it was not run.")
            continue
        params = next((action[key] for key in _PARAM_KEYS if key in action), None)
        builder.add(name, params)


def _reading_notes(readings: list[_Reading], chosen: _Reading) -> list[str]:
    notes = []
    if len(readings) > 1:
        notes.append(f"Your answer had {len(readings)} JSON blocks; only the last readable one was used.")
    skipped = [r for r in readings if r.error is not None and r.candidate.start > chosen.candidate.start]
    if skipped:
        notes.append(f"A later block could not be read ({skipped[-1].error}); it was ignored.")
    if chosen.repairs:
        notes.append(f"Your JSON block was repaired before it was read ({', '.join(chosen.repairs)}).")
    return notes


def _unreadable_note(readings: list[_Reading]) -> str:
    if not readings:
        return f"Your answer had no JSON action block, so nothing was run. {_FORMAT_REMINDER}"
    return f"Your answer could not be read ({readings[-1].error}), so nothing was run. {_FORMAT_REMINDER}"
