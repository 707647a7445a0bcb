"""The XML (Hermes) protocol: rendering, reading back, and streaming split anywhere."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.model import ModelRequest, ToolSpec
from ishiki_host.engines.toolcall import xml_protocol
from ishiki_host.engines.toolcall.xml_protocol import (
    NoteEvent,
    TextEvent,
    ThinkingEvent,
    ToolCallEvent,
    ToolCallStreamParser,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=10,
)
names = st.from_regex(r"[a-z][a-z0-9_]{0,24}", fullmatch=True)
calls = st.lists(
    st.builds(lambda n, a: ToolCall("x", n, a), names, st.dictionaries(st.text(), json_values, max_size=4)),
    max_size=4,
)
prose = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=60)
FRAGMENTS = [
    "<tool_call>", "</tool_call>", "< TOOL_CALL >", "</ tool_call>", "<think>", "</think>", "<tool_calls>", "<",
    ">", "{", "}", "[", "]", '"', "'", "\\", ":", ",", "/", "*", "//", "/*", "*/", " ", "\n", "\r\n", "```",
    '"name"', '"read"', '"arguments"', '{"name": "read", "arguments": {"path": "</tool_call>"}}',
    '{"name": "send_message", "arguments": "{\\"text\\": \\"hi\\"}"}', "hello", "ü🎉中", "True", "null",
]  # fmt: skip
answers = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)


def _split(text: str, cuts: list[int]) -> list[str]:
    points = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(points)]


def _stream(chunks: list[str], tools: list[str] | None = None) -> tuple[list[Any], Any]:
    parser = ToolCallStreamParser(tools, step=1)
    events: list[Any] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.finish()
    return events, parser.answer()


@given(calls, prose, prose)
def test_rendered_calls_parse_back_to_the_same_calls(expected: list[ToolCall], before: str, after: str) -> None:
    answer = f"{before}\n{xml_protocol.render_tool_calls(expected)}\n{after}"
    parsed = xml_protocol.parse_answer(answer, step=2)
    assert parsed.ok
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [(c.name, c.arguments) for c in expected]
    assert [c.id for c in parsed.tool_calls] == [f"call_2_{i}" for i in range(len(expected))]
    assert parsed.notes == ()


@given(st.one_of(answers, calls.map(xml_protocol.render_tool_calls)), st.data())
def test_any_split_reads_like_one_shot(answer: str, data: st.DataObject) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(answer)), max_size=12))
    tools = data.draw(st.sampled_from([None, ["read"]]))
    whole_events, whole = _stream([answer], tools)
    events, parsed = _stream(_split(answer, cuts), tools)
    assert parsed == whole
    assert xml_protocol.parse_answer(answer, tools, step=1) == whole
    calls_seen = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert calls_seen == list(parsed.tool_calls)
    assert "".join(e.text for e in events if isinstance(e, TextEvent)) == "".join(
        e.text for e in whole_events if isinstance(e, TextEvent)
    )
    assert [e for e in events if isinstance(e, NoteEvent)] == [e for e in whole_events if isinstance(e, NoteEvent)]


def test_events_come_as_soon_as_they_are_certain() -> None:
    parser = ToolCallStreamParser(["read"])
    assert parser.feed("Hello <") == [TextEvent("Hello ")]
    assert parser.feed("b> there <tool_") == [TextEvent("<b> there ")]
    assert parser.feed('call>{"name": "read", "arguments": {"path": "</tool_call>"') == []
    event = parser.feed("}}")
    assert event == []  # the closing tag may still come
    [call_event] = parser.feed("\n</tool_call>")
    assert isinstance(call_event, ToolCallEvent)
    assert call_event.call.arguments == {"path": "</tool_call>"}
    assert parser.feed("<think>hm") == [ThinkingEvent("hm")]
    assert parser.feed("</think>bye") == [TextEvent("bye")]
    assert parser.finish() == []
    assert parser.answer().text == "Hello <b> there bye"
    assert parser.answer().thoughts == "hm"


def test_misuse_is_refused() -> None:
    parser = ToolCallStreamParser()
    with pytest.raises(RuntimeError, match="before finish"):
        parser.answer()
    parser.finish()
    with pytest.raises(RuntimeError, match="after finish"):
        parser.feed("x")


def test_catalogue_is_hermes_style() -> None:
    tools = [ToolSpec("read", "Read a resource.", {"type": "object", "properties": {"url": {"type": "string"}}})]
    section = xml_protocol.render_catalogue(tools)
    inside = section.split("<tools>\n")[1].split("\n</tools>")[0]
    assert json.loads(inside) == {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a resource.",
            "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
        },
    }
    assert "<tool_call>" in section
    assert "<tool_response>" in section
    assert "at least one function" in xml_protocol.render_catalogue(tools, tool_choice="required")
    assert '"read" now' in xml_protocol.render_catalogue(tools, tool_choice="read")
    assert "No functions" in xml_protocol.render_catalogue(tools, tool_choice="none")


def test_tool_responses_and_history() -> None:
    call_a = ToolCall("c1", "read", {"url": "a"})
    call_b = ToolCall("c2", "send_message", {"text": "</tool_response>"})
    history = [
        Message.user("hi"),
        Message.assistant("Looking.", [call_a, call_b]),
        Message.tool(call_a, '{"size": 3, "lines": ["x"]}'),
        Message.tool(call_b, "channel closed", is_error=True),
        Message.assistant("Done."),
    ]
    rendered = xml_protocol.render_history(history)
    assert [m.role for m in rendered] == ["user", "assistant", "user", "assistant"]
    assert rendered[1].text.startswith("Looking.\n<tool_call>\n")
    again = xml_protocol.parse_answer(rendered[1].text)
    assert [(c.name, c.arguments) for c in again.tool_calls] == [("read", {"url": "a"}), call_b_pair(call_b)]
    blocks = rendered[2].text.split("</tool_response>")
    first = json.loads(blocks[0].removeprefix("<tool_response>\n"))
    second = json.loads(blocks[1].strip().removeprefix("<tool_response>\n"))
    assert first == {"name": "read", "content": {"size": 3, "lines": ["x"]}}
    assert second == {"name": "send_message", "content": "channel closed", "error": True}
    assert rendered[3] == history[-1]


def call_b_pair(call: ToolCall) -> tuple[str, dict[str, Any]]:
    """A call as (name, arguments)."""
    return call.name, dict(call.arguments)


def test_request_is_rewritten_for_a_model_without_tools() -> None:
    tool = ToolSpec("finish", "End the turn.")
    request = ModelRequest(messages=(Message.system("You are Ann."), Message.user("hi")), tools=(tool,))
    rewritten = xml_protocol.render_request(request)
    assert rewritten.tools == ()
    assert rewritten.messages[0].text.startswith("You are Ann.\n\n# Tools")
    assert '"name": "finish"' in rewritten.messages[0].text
