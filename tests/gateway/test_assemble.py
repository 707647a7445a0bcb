"""Tool-call delta assembly, argument parsing and usage resolution."""

from __future__ import annotations

import pytest

from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, ToolCallDelta
from ishiki_host.gateway.assemble import StreamAssembler, make_tool_call, resolve_usage

REQUEST = ModelRequest((Message.user("hello there"),))


def test_interleaved_deltas_are_grouped_by_index() -> None:
    assembler = StreamAssembler("p:m", REQUEST)
    for delta in [
        ToolCallDelta(1, "call_b", "write", ""),
        ToolCallDelta(0, "call_a", "read", '{"ur'),
        ToolCallDelta(1, None, None, '{"text": "x"}'),
        ToolCallDelta(0, None, "read", 'l": "a"}'),  # some servers repeat the name
    ]:
        assembler.add_tool_delta(delta)
    assembler.add_text("Let me ")
    assembler.add_text("see.")
    result = assembler.result()
    assert [(c.id, c.name, dict(c.arguments)) for c in result.tool_calls] == [
        ("call_a", "read", {"url": "a"}),
        ("call_b", "write", {"text": "x"}),
    ]
    assert result.text == "Let me see."
    assert result.finish_reason == "tool_calls"


def test_a_call_without_id_gets_one() -> None:
    assembler = StreamAssembler("p:m", REQUEST)
    assembler.add_tool_delta(ToolCallDelta(0, None, "read", "{}"))
    (call,) = assembler.result().tool_calls
    assert call.id.startswith("call_")


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ("{", "arguments are not valid JSON"),
        ('{"a": 1', "arguments are not valid JSON"),
        ("[1]", "arguments must be a JSON object, not array"),
        ('"text"', "arguments must be a JSON object, not string"),
        ("42", "arguments must be a JSON object, not number"),
        ("null", "arguments must be a JSON object, not null"),
        ("true", "arguments must be a JSON object, not boolean"),
    ],
)
def test_arguments_that_are_not_an_object(raw: str, error: str) -> None:
    call = make_tool_call("c", "read", raw)
    assert call.arguments == {}
    assert call.raw_arguments == raw
    assert call.parse_error is not None
    assert call.parse_error.startswith(error)


@pytest.mark.parametrize("raw", [None, "", "  ", "{}"])
def test_empty_arguments_mean_an_empty_object(raw: str | None) -> None:
    call = make_tool_call("c", "ping", raw)
    assert (dict(call.arguments), call.parse_error) == ({}, None)


def test_usage_from_the_provider_or_estimated() -> None:
    assert resolve_usage(REQUEST, "abcd", (), 7, 3).estimated is False
    partial = resolve_usage(REQUEST, "abcdefgh", (), 7, None)
    assert (partial.input_tokens, partial.output_tokens, partial.estimated) == (7, 2, True)
    none = resolve_usage(REQUEST, "", (make_tool_call("c", "read", '{"url": "x"}'),), None, None)
    assert none.estimated
    assert none.input_tokens == 4 + 3  # message framing + "hello there"
    assert none.output_tokens == 1 + 3
