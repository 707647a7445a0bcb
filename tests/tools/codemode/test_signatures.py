"""Typed signatures: what the model reads in the codemode tool's description."""

from __future__ import annotations

from typing import Any

import pytest

from ishiki_host.core.model import ToolSpec
from ishiki_host.tools.codemode import Limits, codemode_description, render_signature, render_signatures


def spec(name: str, parameters: dict[str, Any], description: str = "") -> ToolSpec:
    return ToolSpec(name, description, parameters)


def test_the_signature_of_a_simple_tool() -> None:
    search = spec(
        "search_files",
        {
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
            "required": ["pattern"],
        },
        "Search files by glob pattern.",
    )
    assert render_signature(search) == (
        "/** Search files by glob pattern. */\n"
        "tools.search_files(input: { pattern: string; path?: string }): Promise<unknown>"
    )


def test_input_is_optional_when_nothing_is_required_and_empty_objects_stay_compact() -> None:
    assert render_signature(spec("ping", {"type": "object", "properties": {}})) == (
        "tools.ping(input?: Record<string, unknown>): Promise<unknown>"
    )
    closed = {"type": "object", "properties": {}, "additionalProperties": False}
    assert render_signature(spec("noop", closed)) == "tools.noop(input?: {}): Promise<unknown>"


@pytest.mark.parametrize(
    ("schema", "rendered"),
    [
        ({"type": "integer"}, "number"),
        ({"type": "boolean"}, "boolean"),
        ({"type": "null"}, "null"),
        ({}, "unknown"),
        ({"enum": ["asc", "desc", 3]}, '"asc" | "desc" | 3'),
        ({"const": "fixed"}, '"fixed"'),
        ({"type": ["string", "null"]}, "string | null"),
        ({"type": "string", "nullable": True}, "string | null"),
        ({"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "string"}]}, "string | number"),
        ({"type": "array", "items": {"type": "string"}}, "string[]"),
        ({"type": "array", "items": {"type": ["string", "number"]}}, "(string | number)[]"),
        ({"type": "array"}, "unknown[]"),
        ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}, "[string, number]"),
        ({"type": "object", "additionalProperties": {"type": "number"}}, "{ [key: string]: number }"),
        (
            {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"anyOf": [{"type": "null"}]}]},
            "{ a?: string } & null",
        ),
    ],
)
def test_json_schema_types_render_as_typescript(schema: dict[str, Any], rendered: str) -> None:
    tool = spec("t", {"type": "object", "properties": {"v": schema}, "required": ["v"]})
    assert render_signature(tool) == f"tools.t(input: {{ v: {rendered} }}): Promise<unknown>"


def test_property_descriptions_and_defaults_become_inline_comments() -> None:
    tool = spec(
        "list_messages",
        {
            "type": "object",
            "properties": {
                "channel": {"type": "string", "description": "Channel id,\n  e.g. group:42"},
                "limit": {"type": "integer", "default": 20, "description": "At most */ this many"},
                "order": {"enum": ["new", "old"], "default": "new"},
            },
        },
    )
    assert render_signature(tool) == (
        "tools.list_messages(input?: { channel?: string /* Channel id, e.g. group:42 */; "
        "limit?: number /* At most *\\/ this many; default: 20 */; "
        'order?: "new" | "old" /* default: "new" */ }): Promise<unknown>'
    )


def test_nested_objects_odd_names_and_multiline_descriptions() -> None:
    tool = spec(
        "web-search",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filter": {
                    "type": "object",
                    "properties": {"site-name": {"type": "string"}, "since": {"type": "string"}},
                    "required": ["site-name"],
                },
            },
            "required": ["query"],
        },
        "Search the web.\nReturns at most ten results.",
    )
    assert render_signature(tool) == (
        "/**\n * Search the web.\n * Returns at most ten results.\n */\n"
        'tools["web-search"](input: { query: string; filter?: { "site-name": string; since?: string } }): '
        "Promise<unknown>"
    )


def test_local_refs_are_inlined_and_recursive_refs_are_named() -> None:
    tool = spec(
        "save_tree",
        {
            "type": "object",
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "label": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                    "required": ["label"],
                }
            },
            "properties": {"root": {"$ref": "#/$defs/Node"}, "other": {"$ref": "#/definitions/Missing"}},
            "required": ["root"],
        },
    )
    assert render_signature(tool) == (
        "tools.save_tree(input: { root: { label: string; children?: Node[] }; other?: Missing }): Promise<unknown>"
    )


def test_signatures_are_sorted_by_name_and_independent_of_input_order() -> None:
    tools = [spec(name, {"type": "object", "properties": {}}, f"The {name} tool.") for name in ("b", "c", "a")]
    rendered = render_signatures(tools)
    assert rendered == render_signatures(reversed(tools))
    assert [line for line in rendered.splitlines() if line.startswith("tools.")] == [
        "tools.a(input?: Record<string, unknown>): Promise<unknown>",
        "tools.b(input?: Record<string, unknown>): Promise<unknown>",
        "tools.c(input?: Record<string, unknown>): Promise<unknown>",
    ]


def test_the_codemode_description_states_the_limits_and_lists_the_tools() -> None:
    tools = [spec("read_file", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})]
    text = codemode_description(tools, Limits(timeout_ms=10_000, max_result_bytes=32 << 10))
    assert "Limits: 10000 ms, 256 MiB of memory," in text
    assert "results up to 32 KiB, tool inputs up to 1 MiB," in text
    assert "16 tool calls at a time, 1000 per program." in text
    assert text.endswith("Tools:\ntools.read_file(input: { path: string }): Promise<unknown>")
