"""The ``xml`` text tool-call protocol: Hermes-style ``<tool_call>`` blocks in the answer's text.

The system prompt lists the tools inside ``<tools></tools>`` as JSON function signatures (the format Hermes,
Qwen and many open models were trained on) and asks for calls as::

    <tool_call>
    {"name": "send_message", "arguments": {"text": "hi"}}
    </tool_call>

Several blocks may appear in one answer; text around them is the answer's text; an answer without blocks ends
the turn. Results go back as ``<tool_response>`` blocks in a user message. Reading is done by
``ToolCallStreamParser`` (see ``_xml_stream`` for the rules); ``parse_answer`` is that parser fed one chunk.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.engines.toolcall._answer import (
    ParsedAnswer,
    call_arguments,
    render_history_with,
    render_request_with,
    result_text,
)
from ishiki_host.engines.toolcall._xml_stream import (
    NoteEvent,
    TextEvent,
    ThinkingEvent,
    ToolCallEvent,
    ToolCallStreamParser,
    XmlEvent,
)

if TYPE_CHECKING:
    from ishiki_host.core.model import ModelRequest, ToolChoice, ToolSpec

__all__ = [
    "NoteEvent",
    "TextEvent",
    "ThinkingEvent",
    "ToolCallEvent",
    "ToolCallStreamParser",
    "XmlEvent",
    "parse_answer",
    "render_catalogue",
    "render_history",
    "render_request",
    "render_tool_calls",
    "render_tool_responses",
]

_INTRO = """\
# Tools

You may call one or more functions to assist with the conversation.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{signatures}
</tools>

For each function call, return a JSON object with the function name and arguments within <tool_call></tool_call> \
XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>

Results come back to you inside <tool_response></tool_response> tags. When you need no function, answer \
without any <tool_call> block: that ends your turn."""


def _signature(tool: ToolSpec) -> str:
    function = {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}
    return json.dumps({"type": "function", "function": function}, ensure_ascii=False)


def render_catalogue(tools: Sequence[ToolSpec], *, tool_choice: ToolChoice = "auto") -> str:
    """The system-prompt section: signatures in ``<tools>`` and how to call them."""
    if not tools or tool_choice == "none":
        return "# Tools\n\nNo functions are available now; do not write <tool_call> blocks."
    section = _INTRO.format(signatures="\n".join(_signature(tool) for tool in tools))
    if tool_choice == "required":
        section += "\n\nYou must call at least one function now."
    elif tool_choice != "auto":
        section += f'\n\nYou must call the function "{tool_choice}" now.'
    return section


def render_tool_calls(calls: Sequence[ToolCall]) -> str:
    """Calls as ``<tool_call>`` blocks, one per call (the inverse of ``parse_answer``)."""
    blocks = []
    for call in calls:
        body = json.dumps({"name": call.name, "arguments": call_arguments(call)}, ensure_ascii=False)
        blocks.append(f"<tool_call>\n{body}\n</tool_call>")
    return "\n".join(blocks)


def render_tool_responses(results: Sequence[Message]) -> str:
    """Tool results as ``<tool_response>`` blocks: ``{"name", "content"}``, plus ``"error": true`` on failure.

    ``content`` is the result's JSON value when the result text is a JSON object or array, else the text.
    """
    blocks = []
    for message in results:
        body: dict[str, Any] = {"name": message.tool_name or "", "content": result_text(message.text)}
        if message.is_error:
            body["error"] = True
        blocks.append(f"<tool_response>\n{json.dumps(body, ensure_ascii=False)}\n</tool_response>")
    return "\n".join(blocks)


def render_history(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Messages as a model without native tools sees them: ``<tool_call>`` text and ``<tool_response>`` turns.

    Consecutive tool results become one user message; other messages are unchanged.
    """
    return render_history_with(messages, calls=render_tool_calls, results=render_tool_responses, joint="\n")


def render_request(request: ModelRequest) -> ModelRequest:
    """``request`` for a model without native tools: history rendered, signatures in the system prompt."""
    return render_request_with(request, render_catalogue, render_history)


def parse_answer(
    text: str,
    tools: Collection[str] | None = None,
    *,
    step: int = 0,
    id_prefix: str = "call",
) -> ParsedAnswer:
    """Read a whole answer (the streaming parser fed one chunk)."""
    parser = ToolCallStreamParser(tools, step=step, id_prefix=id_prefix)
    parser.feed(text)
    parser.finish()
    return parser.answer()
