"""Validators are kept by the schema's content, bounded: a schema built again for every call compiles once."""

from __future__ import annotations

import copy
from typing import Any

from ishiki_host.config.validation import _COMPILED_MAX, compiled
from ishiki_host.core.tool_calls import _VALIDATOR_CACHE_SIZE, _validator_for


def _schema(tag: str) -> dict[str, Any]:
    return {"type": "object", "properties": {tag: {"type": "string"}}, "required": [tag]}


def test_an_equal_schema_built_again_gets_the_same_validator() -> None:
    first = compiled(_schema("a"))
    assert compiled(_schema("a")) is first
    assert compiled(dict(reversed(_schema("a").items()))) is first  # key order is not content


def test_a_different_schema_gets_its_own_validator() -> None:
    assert compiled(_schema("b")) is not compiled(_schema("c"))
    assert compiled(_schema("b")).is_valid({"b": "x"})
    assert not compiled(_schema("c")).is_valid({"b": "x"})


def test_changing_a_schema_after_use_changes_nothing_cached() -> None:
    schema = _schema("d")
    validator = compiled(schema)
    schema["required"] = []
    assert not validator.is_valid({})
    assert compiled(schema).is_valid({})
    assert not compiled(_schema("d")).is_valid({})


def test_the_cache_is_bounded() -> None:
    first = compiled(_schema("bounded-0"))
    for index in range(1, _COMPILED_MAX + 1):
        compiled(_schema(f"bounded-{index}"))
    assert compiled(_schema("bounded-0")) is not first  # dropped as the least recently used


def test_a_schema_that_is_not_json_is_still_compiled() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number", "maximum": float("inf")}}}
    assert compiled(schema).is_valid({"n": 1})


def test_tool_argument_validators_are_kept_by_content() -> None:
    first = _validator_for(_schema("tool"))
    assert _validator_for(copy.deepcopy(_schema("tool"))) is first
    assert _validator_for(_schema("other-tool")) is not first


def test_tool_argument_validators_are_bounded() -> None:
    first = _validator_for(_schema("tool-bounded-0"))
    for index in range(1, _VALIDATOR_CACHE_SIZE + 1):
        _validator_for(_schema(f"tool-bounded-{index}"))
    assert _validator_for(_schema("tool-bounded-0")) is not first
