"""Tools as the model sees them inside codemode: TypeScript-like signatures rendered from JSON Schema.

    /** Search files by glob pattern. */
    tools.search_files(input: { pattern: string /* a glob */; path?: string }): Promise<unknown>

Rendering is deterministic (tools sorted by name, properties in schema order) and compact: one line per
signature, property descriptions and defaults as inline comments. Local ``$ref``s are inlined; a recursive
one is shown by its definition name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host.tools.codemode._prelude import tool_label

if TYPE_CHECKING:
    from ishiki_host.core.model import ToolSpec
    from ishiki_host.tools.codemode._limits import Limits

__all__ = ["CODEMODE_PARAMETERS", "codemode_description", "render_signature", "render_signatures"]

_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_PRIMITIVES = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}
_MAX_DEPTH = 8

CODEMODE_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "The body of an async JavaScript function; end it with `return <value>`.",
        }
    },
    "required": ["code"],
    "additionalProperties": False,
}
"""The JSON Schema of the ``codemode`` tool's arguments."""


def render_signatures(specs: Iterable[ToolSpec]) -> str:
    """Every tool's signature, sorted by name, one block per tool."""
    return "\n".join(render_signature(spec) for spec in sorted(specs, key=lambda spec: spec.name))


def render_signature(spec: ToolSpec) -> str:
    """One tool: its description as a doc comment, then ``tools.<name>(input: {...}): Promise<unknown>``."""
    schema = spec.parameters
    optional = "?" if not schema.get("required") else ""
    head = f"{tool_label(spec.name)}(input{optional}: {_Types(schema).render(schema, 0)}): Promise<unknown>"
    doc = _doc_comment(spec.description)
    return f"{doc}\n{head}" if doc else head


def codemode_description(specs: Iterable[ToolSpec], limits: Limits) -> str:
    """The ``codemode`` tool's description: how to write a program, its limits, and the callable tools."""
    return "\n".join(
        [
            "Run a JavaScript program that calls tools. `code` is the body of an async function: use `await`,",
            "and finish with `return <value>`. The returned value, as JSON, is the only thing you will see, so",
            "return exactly what you need (filter and summarize inside the program).",
            "Call a tool with `await tools.<name>({...})`; run independent calls at once with",
            "`await Promise.all([...])`. A failing tool rejects its promise (catch it with try/catch).",
            "`console.log` output is kept for debugging. There is no file system, network, `require`,",
            "`import` or `fetch`: only the tools below.",
            f"Limits: {limits.timeout_ms} ms, {_size(limits.memory_limit_bytes)} of memory,",
            f"results up to {_size(limits.max_result_bytes)}, tool inputs up to {_size(limits.max_tool_input_bytes)},",
            f"{limits.max_concurrent_tool_calls} tool calls at a time, {limits.max_tool_calls} per program.",
            "",
            "Tools:",
            render_signatures(specs),
        ]
    )


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


def _doc_comment(text: str) -> str:
    lines = [line.rstrip() for line in _safe_comment(text).strip().splitlines()]
    if not lines:
        return ""
    if len(lines) == 1:
        return f"/** {lines[0]} */"
    return "\n".join(["/**", *(f" * {line}".rstrip() for line in lines), " */"])


def _safe_comment(text: str) -> str:
    return text.replace("*/", "*\\/")


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _union(parts: Iterable[str]) -> str:
    unique = list(dict.fromkeys(parts))
    return " | ".join(unique) if unique else "never"


class _Types:
    """Renders the JSON Schema types of one tool, resolving its local ``$ref``s."""

    def __init__(self, root: Mapping[str, Any]):
        self._root = root
        self._resolving: list[str] = []

    def render(self, schema: Any, depth: int) -> str:
        """The TypeScript-like type of ``schema``."""
        if schema is False:
            return "never"
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
            return "unknown"
        rendered = self._render(schema, depth)
        return f"{rendered} | null" if schema.get("nullable") is True and rendered != "null" else rendered

    def _render(self, schema: Mapping[str, Any], depth: int) -> str:
        if "$ref" in schema:
            return self._ref(str(schema["$ref"]), depth)
        if "const" in schema:
            return _literal(schema["const"])
        if isinstance(schema.get("enum"), list):
            return _union(_literal(value) for value in schema["enum"])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                return _union(self.render(sub, depth + 1) for sub in schema[key])
        if isinstance(schema.get("allOf"), list):
            return " & ".join(self._grouped(sub, depth) for sub in schema["allOf"]) or "unknown"
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union(self._render({**schema, "type": one}, depth) for one in kind)
        if kind == "object" or (kind is None and "properties" in schema):
            return self._object(schema, depth)
        if kind == "array" or (kind is None and ("items" in schema or "prefixItems" in schema)):
            return self._array(schema, depth)
        return _PRIMITIVES.get(str(kind), "unknown")

    def _grouped(self, schema: Any, depth: int) -> str:
        rendered = self.render(schema, depth + 1)
        return f"({rendered})" if " | " in rendered or " & " in rendered else rendered

    def _object(self, schema: Mapping[str, Any], depth: int) -> str:
        properties = schema.get("properties")
        required = set(schema.get("required") or ())
        parts = []
        if isinstance(properties, Mapping):
            for name, sub in properties.items():
                key = name if _IDENTIFIER.match(name) else _literal(name)
                mark = "" if name in required else "?"
                parts.append(f"{key}{mark}: {self.render(sub, depth + 1)}{_inline_doc(sub)}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            parts.append(f"[key: string]: {self.render(extra, depth + 1)}")
        if not parts:
            return "{}" if extra is False else "Record<string, unknown>"
        return "{ " + "; ".join(parts) + " }"

    def _array(self, schema: Mapping[str, Any], depth: int) -> str:
        tuple_items = schema.get("prefixItems")
        if tuple_items is None and isinstance(schema.get("items"), list):
            tuple_items = schema["items"]
        if isinstance(tuple_items, list):
            return "[" + ", ".join(self.render(sub, depth + 1) for sub in tuple_items) + "]"
        items = schema.get("items", True)
        return f"{self._grouped(items, depth)}[]"

    def _ref(self, ref: str, depth: int) -> str:
        name = ref.rsplit("/", 1)[-1] or "unknown"
        if not ref.startswith("#/") or ref in self._resolving:
            return name
        target: Any = self._root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, Mapping) else None
        if target is None:
            return name
        self._resolving.append(ref)
        try:
            return self.render(target, depth + 1)
        finally:
            self._resolving.pop()


def _inline_doc(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return ""
    notes = []
    description = schema.get("description")
    if isinstance(description, str) and description.strip():
        notes.append(" ".join(description.split()))
    if "default" in schema:
        notes.append(f"default: {_literal(schema['default'])}")
    return f" /* {_safe_comment('; '.join(notes))} */" if notes else ""
