"""``TestModel`` calls every offered tool with arguments that validate, then answers; the arguments are made up
from the tools' schemas deterministically."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft4Validator, Draft202012Validator

from ishiki_host import ModelRequest, StreamDone, TextDelta, ToolCallDelta, ToolSpec, hookimpl
from ishiki_host.core.messages import Message
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.testing import KERNEL_TOOL_NAMES, RuntimeHarness, TestModel, example_arguments
from ishiki_host.testing.schema_values import SchemaValueError, example_value

SCHEMAS: dict[str, dict[str, Any]] = {
    "empty": {"type": "object", "properties": {}},
    "required only": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name"],
    },
    "strings": {
        "type": "object",
        "properties": {
            "long": {"type": "string", "minLength": 5, "maxLength": 6},
            "empty": {"type": "string", "maxLength": 0},
            "choice": {"enum": ["metric", "imperial"]},
            "fixed": {"const": "v1"},
            "example": {"type": "string", "examples": ["Kyoto"]},
            "defaulted": {"type": "string", "default": "x"},
            "when": {"type": "string", "format": "date-time"},
            "mail": {"type": "string", "format": "email"},
            "code": {"type": "string", "pattern": r"^[A-Z]{3}-\d{2,4}$"},
            "slug": {"type": "string", "pattern": "^[a-z0-9]+(?:-[a-z0-9]+)*$", "minLength": 4},
            "hex": {"type": "string", "pattern": "^#?([a-f0-9]{6}|[a-f0-9]{3})$"},
            "not at": {"type": "string", "pattern": "^[^@]+@[^@]+\\.[a-z]{2,}$"},
            "word": {"type": "string", "pattern": "colou?r"},
        },
    },
    "numbers": {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 1},
            "negative": {"type": "integer", "maximum": -3},
            "open": {"type": "number", "exclusiveMinimum": 0},
            "between": {"type": "number", "exclusiveMinimum": 0.2, "exclusiveMaximum": 0.3},
            "stepped": {"type": "integer", "minimum": 7, "multipleOf": 5},
            "half": {"type": "integer", "minimum": 1, "multipleOf": 2.5},
            "ratio": {"type": "number", "maximum": -0.5},
            "flag": {"type": "boolean"},
            "nothing": {"type": "null"},
            "maybe": {"type": ["null", "integer"], "minimum": 2},
        },
        "required": ["count", "negative", "open", "between", "stepped", "half", "ratio", "flag", "nothing", "maybe"],
    },
    "arrays and nesting": {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2, "uniqueItems": True},
            "points": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"],
                    "additionalProperties": False,
                },
            },
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2},
            "ids": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 3, "uniqueItems": True},
        },
        "required": ["tags", "points", "pair", "ids"],
    },
    "refs and branches": {
        "type": "object",
        "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
        "definitions": {"unit": {"enum": ["c", "f"]}},
        "properties": {
            "where": {"$ref": "#/$defs/place"},
            "unit": {"$ref": "#/definitions/unit"},
            "either": {"anyOf": [{"type": "integer", "minimum": 10}, {"type": "string"}]},
            "one": {"oneOf": [{"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"]}]},
            "all": {"allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"required": ["b"]}]},
            "tree": {"$ref": "#/$defs/node"},
        },
        "required": ["where", "unit", "either", "one", "all", "tree"],
    },
    "dependencies and counts": {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "boolean"}},
        "required": ["a"],
        "dependentRequired": {"a": ["b"]},
        "minProperties": 3,
    },
    "additional": {
        "type": "object",
        "required": ["free"],
        "additionalProperties": {"type": "integer", "minimum": 4},
    },
}
SCHEMAS["strings"]["required"] = list(SCHEMAS["strings"]["properties"])
SCHEMAS["refs and branches"]["$defs"]["node"] = {
    "type": "object",
    "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    "required": ["value"],
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_the_arguments_validate_against_the_schema(name: str) -> None:
    schema = SCHEMAS[name]
    arguments = example_arguments(schema)
    Draft202012Validator(schema).validate(arguments)
    assert arguments == example_arguments(schema)  # deterministic


def test_the_values_are_the_smallest_that_fit() -> None:
    args = example_arguments(SCHEMAS["strings"])
    assert args["long"] == "aaaaa"
    assert (args["empty"], args["choice"], args["fixed"], args["example"]) == ("", "metric", "v1", "Kyoto")
    assert (args["code"], args["hex"], args["word"]) == ("AAA-00", "aaaaaa", "color")
    numbers = example_arguments(SCHEMAS["numbers"])
    assert (numbers["count"], numbers["negative"], numbers["stepped"], numbers["half"]) == (1, -3, 10, 5)
    assert numbers["open"] == 1.0
    assert 0.2 < numbers["between"] < 0.3
    assert (numbers["flag"], numbers["nothing"], numbers["maybe"]) == (False, None, 2)
    arrays = example_arguments(SCHEMAS["arrays and nesting"])
    assert (arrays["tags"], arrays["ids"], arrays["pair"]) == (["a", "b"], [0, 1, 2], ["a", 0])


def test_the_draft_4_form_of_exclusive_bounds() -> None:
    schema = {"type": "integer", "minimum": 3, "exclusiveMinimum": True, "maximum": 5}
    value = example_value(schema)
    Draft4Validator(schema).validate(value)
    assert value == 4


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"$ref": "other.json#/x"}, "same schema"),
        ({"$ref": "#/$defs/missing"}, "names nothing"),
        (False, "no value validates"),
        ({"type": "integer", "minimum": 3, "maximum": 2}, "no integer fits"),
        ({"$ref": "#"}, "deeper than 32"),
    ],
)
def test_what_cannot_be_made_up_is_said(schema: Any, problem: str) -> None:
    with pytest.raises(SchemaValueError, match=problem):
        example_value(schema)


def test_a_pattern_it_cannot_honour_gives_a_string_anyway() -> None:
    value = example_value({"type": "string", "pattern": r"^(?=.*\d)\w+$"})
    assert isinstance(value, str)  # documented: it may not match; the agent then rejects the call


_SCALARS = st.one_of(
    st.builds(
        lambda lo, n: {"type": "integer", "minimum": lo, "maximum": lo + n}, st.integers(-50, 50), st.integers(0, 9)
    ),
    st.builds(lambda lo: {"type": "number", "exclusiveMinimum": lo}, st.floats(-100, 100, allow_nan=False)),
    st.builds(
        lambda lo, n: {"type": "string", "minLength": lo, "maxLength": lo + n}, st.integers(0, 20), st.integers(0, 5)
    ),
    st.builds(lambda values: {"enum": values}, st.lists(st.integers() | st.text(max_size=5), min_size=1, max_size=4)),
    st.sampled_from([{"type": "boolean"}, {"type": "null"}, {"type": "string", "format": "uuid"}, {}]),
    st.sampled_from([{"type": "string", "pattern": p} for p in (r"^\d{3}$", "^[a-c]+x?$", "^(ab|cd){2}$", "z")]),
)
_SCHEMAS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.builds(lambda items, n: {"type": "array", "items": items, "minItems": n}, inner, st.integers(0, 3)),
        st.builds(
            lambda props, n: {
                "type": "object",
                "properties": props,
                "required": sorted(props)[:n],
                "additionalProperties": False,
            },
            st.dictionaries(st.text("abcdef", min_size=1, max_size=3), inner, max_size=4),
            st.integers(0, 4),
        ),
        st.builds(lambda branches: {"anyOf": branches}, st.lists(inner, min_size=1, max_size=3)),
    ),
    max_leaves=8,
)


@given(_SCHEMAS)
def test_generated_values_validate_for_generated_schemas(schema: Mapping[str, Any]) -> None:
    Draft202012Validator(schema).validate(example_value(schema))


# -- the model ------------------------------------------------------------------------------------------

SPECS = (
    ToolSpec("greet", "Greet.", SCHEMAS["required only"]),
    ToolSpec("send_message", "Send.", {"type": "object", "properties": {"text": {"type": "string"}}}),
    ToolSpec("finish", "Finish."),
    ToolSpec("count", "Count.", SCHEMAS["numbers"]),
)


def _request(*messages: Message, tools: tuple[ToolSpec, ...] = SPECS, tool_choice: str = "auto") -> ModelRequest:
    return ModelRequest((Message.system("persona"), *messages), tools=tools, tool_choice=tool_choice)


@pytest.mark.anyio
async def test_it_calls_each_offered_tool_but_the_kernels_then_answers() -> None:
    model = TestModel()
    first = await model.generate(_request(Message.user("hi")))
    assert [c.name for c in first.tool_calls] == ["greet", "count"]
    assert [c.id for c in first.tool_calls] == ["test_call_1", "test_call_2"]
    assert first.tool_calls[0].arguments == {"name": "a"}
    results = [Message.tool(c, "ok") for c in first.tool_calls]
    second = await model.generate(_request(Message.user("hi"), first.message(), *results))
    assert (second.text, second.tool_calls) == ("called greet, count", ())
    assert len(model.requests) == 2
    assert set(KERNEL_TOOL_NAMES) == {"send_message", "finish", "wait", "read"}


@pytest.mark.anyio
async def test_named_tools_skip_and_text_are_options() -> None:
    named = TestModel(call_tools=["finish", "missing"], text="bye")
    first = await named.generate(_request(Message.user("hi")))
    assert [c.name for c in first.tool_calls] == ["finish"]
    second = await named.generate(_request(Message.user("hi"), first.message(), Message.tool(first.tool_calls[0], "")))
    assert second.text == "bye"
    every = TestModel(skip=())
    assert len((await every.generate(_request(Message.user("hi")))).tool_calls) == 4
    with pytest.raises(ValueError, match="call_tools"):
        TestModel(call_tools="greet")


@pytest.mark.anyio
async def test_tool_choice_is_honoured_and_no_tools_means_text() -> None:
    model = TestModel()
    assert (await model.generate(_request(Message.user("hi"), tool_choice="none"))).text == "called no tools"
    only = await model.generate(_request(Message.user("hi"), tool_choice="finish"))
    assert [c.name for c in only.tool_calls] == ["finish"]
    assert (await model.generate(_request(Message.user("hi"), tools=()))).text == "called no tools"


@pytest.mark.anyio
async def test_it_streams_the_same_answer() -> None:
    model = TestModel()
    events = [e async for e in model.stream(_request(Message.user("hi")))]
    assert isinstance(events[-1], StreamDone)
    assert [e.name for e in events if isinstance(e, ToolCallDelta) and e.name] == ["greet", "count"]
    answer = [e async for e in model.stream(_request(Message.user("hi"), tools=()))]
    assert "".join(e.text for e in answer if isinstance(e, TextDelta)) == "called no tools"


class _Tools:
    """An extension whose tools record the arguments they got."""

    def __init__(self) -> None:
        self.got: dict[str, Mapping[str, Any]] = {}

    @hookimpl
    def ishiki_tools(self) -> list[Tool]:
        def handler(name: str) -> Any:
            async def run(args: Mapping[str, Any], ctx: ToolContext) -> str:
                self.got[name] = args
                return f"{name} ok"

            return run

        return [Tool(name, name, handler(name), SCHEMAS[name]) for name in ("strings", "numbers", "refs and branches")]


@pytest.mark.anyio
async def test_in_a_real_turn_every_tool_runs_with_valid_arguments(tmp_path: Path) -> None:
    tools = _Tools()
    model = TestModel()
    async with RuntimeHarness(tmp_path, model=model, kernel_tools=True) as rt:
        await rt.mount_extension(tools)
        with anyio.fail_after(10):
            outcome = await rt.say("go")
    assert outcome.status == "done"
    assert set(tools.got) == {"strings", "numbers", "refs and branches"}  # the agent validated them, too
    assert {t.name for t in model.requests[0].tools} >= set(KERNEL_TOOL_NAMES)
    assert rt.channel.texts() == ["called strings, numbers, refs and branches"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT.*Z", tools.got["strings"]["when"])
