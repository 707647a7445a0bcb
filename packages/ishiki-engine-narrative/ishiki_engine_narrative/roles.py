"""The three roles of one step: what each is asked, and how its answer is checked.

- ``narrator_request`` / ``parse_decision``: the Narrator chooses ``act``, ``reply``, ``wait`` or ``finish``.
- ``decoder_request`` / ``check_calls``: the Action Decoder answers with native tool calls over the real tool
  specs of the step; every call is checked against its tool's JSON Schema.
- ``replyer_request`` / ``reply_messages``: the Replyer writes the message text; it becomes ``send_message``
  arguments ``{"messages": [...]}``, checked against the real ``send_message`` schema.
- ``control_call``: ``wait`` and ``finish`` become the host's kernel tools, as far as the step offers them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema
from ishiki_host import Message, ModelRequest, ToolCall, ToolSpec

from ishiki_engine_narrative._text import clip, one_line, strip_reasoning
from ishiki_engine_narrative.errors import RoleOutputInvalid

if TYPE_CHECKING:
    from ishiki_host import Priority

    from ishiki_engine_narrative.config import RoleSettings
    from ishiki_engine_narrative.story import Decision

__all__ = [
    "CONTROL_TOOLS",
    "FINISH",
    "SEND",
    "WAIT",
    "Scene",
    "check_calls",
    "control_call",
    "decoder_request",
    "narrator_request",
    "reply_messages",
    "replyer_request",
]

SEND, WAIT, FINISH = "send_message", "wait", "finish"
CONTROL_TOOLS = frozenset({SEND, WAIT, FINISH})
"""Kernel tools the pipeline calls itself; the Action Decoder gets every other tool of the step."""

_NARRATOR_FORMAT = (
    "## Answer format\n"
    'Answer with one JSON object and nothing else: {"intent": "act" | "reply" | "wait" | "finish", '
    '"rationale": "<one line: why, and exactly what to do or say>"}'
)
_REPLY_FORMAT = (
    "## Answer format\n"
    "Write only the message text. To send several separate chat messages, put a line with only --- between them."
)
_SEPARATOR = "---"


@dataclass(frozen=True)
class Scene:
    """What every role of one step reads: the rules, the story so far, the recent events and the tools."""

    rules: str
    story: str
    events: str
    tools: tuple[ToolSpec, ...]
    priority: Priority = "interactive"
    failure: str | None = None

    @property
    def action_tools(self) -> tuple[ToolSpec, ...]:
        """The tools the Action Decoder may call."""
        return tuple(tool for tool in self.tools if tool.name not in CONTROL_TOOLS)

    def tool(self, name: str) -> ToolSpec | None:
        """The step's tool called ``name``, if offered."""
        return next((tool for tool in self.tools if tool.name == name), None)

    def sections(self) -> list[str]:
        """The sections every role's prompt starts with."""
        return [
            f"## Persona and rules\n{self.rules or '(none given)'}",
            f"## The story so far\n{self.story}",
            f"## Recent events (oldest first)\n{self.events or '(none)'}",
        ]


def _request(
    settings: RoleSettings, user: str, priority: Priority, tools: tuple[ToolSpec, ...] = (), choice: str = "auto"
) -> ModelRequest:
    return ModelRequest(
        messages=(Message.system(settings.prompt), Message.user(user)),
        tools=tools,
        tool_choice=choice,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        priority=priority,
    )


def _abilities(scene: Scene) -> str:
    lines = ["## What the persona can do"]
    tools = scene.action_tools
    if tools:
        lines.append("- act, with these tools:")
        lines += [f"  - {tool.name}: {clip(one_line(tool.description), 200)}" for tool in tools]
    else:
        lines.append("- act: no tools are available now (do not choose act)")
    lines += ["- reply: say something in the chat", "- wait: do nothing until something new happens"]
    lines.append("- finish: end this turn")
    return "\n".join(lines)


def narrator_request(settings: RoleSettings, scene: Scene) -> ModelRequest:
    """The Narrator's request: the scene, what the persona can do, the last failure if any, the format."""
    parts = [*scene.sections(), _abilities(scene)]
    if scene.failure:
        parts.append(f"## What went wrong at the last step\n{scene.failure}")
    parts.append(_NARRATOR_FORMAT)
    return _request(settings, "\n\n".join(parts), scene.priority)


def decoder_request(settings: RoleSettings, scene: Scene, decision: Decision) -> ModelRequest:
    """The Action Decoder's request: the scene and the intent, with the real action tools, a call required."""
    intent = f"## The intent\nact: {decision.rationale}\n\nCall the tools that carry this out now."
    user = "\n\n".join([*scene.sections(), intent])
    return _request(settings, user, scene.priority, scene.action_tools, "required")


def replyer_request(settings: RoleSettings, scene: Scene, decision: Decision) -> ModelRequest:
    """The Replyer's request: the scene, what the message should do, the format."""
    what = f"## What the message should do\n{decision.rationale}"
    return _request(settings, "\n\n".join([*scene.sections(), what, _REPLY_FORMAT]), scene.priority)


def _schema_problem(spec: ToolSpec, arguments: Mapping[str, Any]) -> str | None:
    """Up to three violations of ``spec``'s schema by ``arguments``, most relevant first; ``None`` if valid."""
    try:
        validator = jsonschema.Draft202012Validator(spec.parameters)
        errors = sorted(validator.iter_errors(dict(arguments)), key=jsonschema.exceptions.relevance)
    except jsonschema.exceptions.SchemaError:
        return None  # a tool with a broken schema: the host's dispatcher has the last word
    problems = []
    for error in errors[:3]:
        where = "/".join(str(part) for part in error.absolute_path)
        problems.append(error.message + (f" (at {where})" if where else ""))
    return "; ".join(problems) or None


def check_calls(calls: Sequence[ToolCall], tools: Sequence[ToolSpec], *, prefix: str) -> tuple[ToolCall, ...]:
    """The Action Decoder's calls, checked: at least one, each to an action tool, with schema-valid arguments.

    Calls without a usable id get ``<prefix>-<n>``. Raises ``RoleOutputInvalid`` naming the first problem.
    """
    if not calls:
        raise RoleOutputInvalid("the Action Decoder called no tool")
    specs = {tool.name: tool for tool in tools}
    checked: list[ToolCall] = []
    seen: set[str] = set()
    for number, call in enumerate(calls, start=1):
        spec = specs.get(call.name)
        if spec is None:
            known = ", ".join(sorted(specs)) or "none"
            raise RoleOutputInvalid(f"the Action Decoder called {call.name!r}, which is not an action tool ({known})")
        if call.parse_error is not None:
            raise RoleOutputInvalid(f"the arguments of {call.name} are not a JSON object: {call.parse_error}")
        problem = _schema_problem(spec, call.arguments)
        if problem is not None:
            shown = clip(json.dumps(dict(call.arguments), ensure_ascii=False), 300)
            raise RoleOutputInvalid(f"the arguments of {call.name} break its schema: {problem}; got {shown}")
        call_id = call.id if call.id and call.id not in seen else f"{prefix}-{number}"
        seen.add(call_id)
        checked.append(ToolCall(call_id, call.name, dict(call.arguments)))
    return tuple(checked)


def reply_messages(text: str, send: ToolSpec | None) -> list[str]:
    """The chat messages of the Replyer's answer, checked against ``send_message``'s schema when offered.

    Raises ``RoleOutputInvalid`` when nothing is left to send or the arguments break the schema.
    """
    body = strip_reasoning(text)
    chunks: list[list[str]] = [[]]
    for line in body.splitlines():
        if line.strip() == _SEPARATOR:
            chunks.append([])
        else:
            chunks[-1].append(line)
    messages = [text for text in ("\n".join(chunk).strip() for chunk in chunks) if text]
    if not messages:
        raise RoleOutputInvalid("the Replyer wrote nothing")
    if send is not None:
        problem = _schema_problem(send, {"messages": messages})
        if problem is not None:
            raise RoleOutputInvalid(f'send_message does not accept {{"messages": [...]}}: {problem}')
    return messages


def control_call(decision: Decision, scene: Scene, call_id: str) -> ToolCall | None:
    """``wait`` / ``finish`` as a kernel-tool call, or ``None`` when the step offers no fitting tool.

    ``wait`` calls the ``wait`` tool when it takes no arguments, else ``finish``; ``finish`` calls ``finish``
    with the rationale as its ``reason`` when the schema allows one. Without either, the step ends with no call.
    """
    order = (WAIT, FINISH) if decision.intent == "wait" else (FINISH,)
    for name in order:
        spec = scene.tool(name)
        if spec is None:
            continue
        for arguments in _control_arguments(name, decision):
            if _schema_problem(spec, arguments) is None:
                return ToolCall(call_id, name, arguments)
    return None


def _control_arguments(name: str, decision: Decision) -> list[dict[str, Any]]:
    if name == FINISH:
        return [{"reason": f"{decision.intent}: {decision.rationale}"}, {}]
    return [{}]
