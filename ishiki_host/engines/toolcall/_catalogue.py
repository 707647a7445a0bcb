"""A tool catalogue as readable text, for models that read their tools in the system prompt.

Each tool becomes a heading, its description, and one line per parameter: name, type, whether it is
required, its description, allowed values, bounds, default and examples. A parameter whose schema is not simple (nested
objects, ``anyOf``...) is shown as its compact JSON Schema instead, so nothing the schema says is lost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ishiki_host.core.model import ToolSpec

__all__ = ["describe_parameters", "describe_tools"]

_SIMPLE_TYPES = frozenset({"string", "number", "integer", "boolean", "null"})
_CONSTRAINTS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "above",
    "exclusiveMaximum": "below",
    "minLength": "min length",
    "maxLength": "max length",
    "minItems": "min items",
    "maxItems": "max items",
    "pattern": "pattern",
    "format": "format",
}
_SHOWN_KEYS = frozenset({"type", "description", "enum", "default", "items", "title", "examples", *_CONSTRAINTS})


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _type_label(schema: Mapping[str, Any]) -> str | None:
    """A short type name (``string``, ``array of integer``); ``None`` when the schema is not that simple."""
    kind = schema.get("type")
    if isinstance(kind, list) and all(k in _SIMPLE_TYPES for k in kind):
        return " or ".join(kind)
    if kind in _SIMPLE_TYPES:
        return str(kind)
    if kind == "array":
        items = schema.get("items")
        if items is None:
            return "array"
        inner = _type_label(items) if isinstance(items, Mapping) and set(items) <= _SHOWN_KEYS else None
        return f"array of {inner}" if inner else None
    if kind == "object" and not schema.get("properties"):
        return "object"
    return None


def _parameter_line(name: str, schema: Any, required: bool) -> str:
    needs = ", required" if required else ""
    if not isinstance(schema, Mapping):
        return f"- {name}{' (required)' if required else ''}: {_compact(schema)}"
    label = _type_label(schema) if set(schema) <= _SHOWN_KEYS else None
    if label is None:
        return f"- {name} (schema {_compact(schema)}{needs})"
    line = f"- {name} ({label}{needs})"
    details = []
    if description := str(schema.get("description") or schema.get("title") or "").strip():
        details.append(description)
    if "enum" in schema:
        details.append("one of " + ", ".join(_compact(v) for v in schema["enum"]))
    details.extend(f"{label} {_compact(schema[key])}" for key, label in _CONSTRAINTS.items() if key in schema)
    if "default" in schema:
        details.append(f"default {_compact(schema['default'])}")
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        details.append("e.g. " + ", ".join(_compact(v) for v in schema["examples"][:3]))
    return f"{line}: {'; '.join(details)}" if details else line


def describe_parameters(schema: Mapping[str, Any]) -> list[str]:
    """One line per parameter of an object schema; the compact schema when it is not an object of properties."""
    properties = schema.get("properties")
    if schema.get("type", "object") != "object" or not isinstance(properties, Mapping):
        return [f"Parameters (JSON Schema): {_compact(schema)}"]
    if not properties:
        return ["Parameters: none"]
    required = set(schema.get("required") or ())
    lines = ["Parameters:"]
    lines.extend(_parameter_line(name, sub, name in required) for name, sub in properties.items())
    extra = {k: v for k, v in schema.items() if k not in {"type", "properties", "required", "description", "title"}}
    if extra:
        lines.append(f"Other constraints (JSON Schema): {_compact(extra)}")
    return lines


def describe_tools(tools: Sequence[ToolSpec]) -> str:
    """Every tool as a ``### name`` section: description, then parameters."""
    sections = []
    for tool in tools:
        lines = [f"### {tool.name}"]
        if tool.description.strip():
            lines.append(tool.description.strip())
        lines.extend(describe_parameters(tool.parameters))
        sections.append("\n".join(lines))
    return "\n\n".join(sections)
