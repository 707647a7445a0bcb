"""The configuration reference, generated from the shipped JSON Schemas: ``docs/reference/*.md``.

Run ``python -m ishiki_host.config.reference docs/reference`` (``make docs``); a test fails when the committed
files differ from what this writes, so the reference never drifts from the schema that enforces it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ishiki_host.config.schemas import SchemaName, load_schema
from ishiki_host.jsontypes import Json

__all__ = ["PAGES", "main", "render_page", "schema_rows", "schema_table", "write_reference"]

PAGES: Mapping[SchemaName, str] = {"profile": "profile.md", "models": "models.md", "host": "ishiki-yaml.md"}
"""Schema -> the page written for it."""

_HEADER = "<!-- Generated from {source} by `{command}`. Do not edit: change the schema and run `make docs`. -->"
COMMAND = "python -m ishiki_host.config.reference docs/reference"


def schema_rows(schema: Mapping[str, Json], prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    """``(key, type, default, description)`` for every key of an object schema, nested keys dotted."""
    required = set(schema.get("required", ()))
    for key, sub in schema.get("properties", {}).items():
        name = f"{prefix}{key}"
        kind = _type(sub) + (" (required)" if key in required else "")
        yield f"`{name}`", kind, _default(sub), _cell(sub.get("description", ""))
        yield from _children(sub, name)


def _children(sub: Mapping[str, Json], name: str) -> Iterator[tuple[str, str, str, str]]:
    if "properties" in sub:
        yield from schema_rows(sub, f"{name}.")
    extra = sub.get("additionalProperties")
    if isinstance(extra, Mapping):
        placeholder = f"{name}.<{sub.get('x-placeholder', 'name')}>"
        if "properties" in extra:
            yield from schema_rows(extra, f"{placeholder}.")
        elif extra.get("type") != "object" or "description" in extra:
            yield f"`{placeholder}`", _type(extra), _default(extra), _cell(extra.get("description", ""))
    items = sub.get("items")
    if isinstance(items, Mapping) and "properties" in items:
        yield from schema_rows(items, f"{name}[].")


def _type(schema: Mapping[str, Json]) -> str:
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        items = schema.get("items", {})
        return f"list of {_type(items)}" if items else "list"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping) and "properties" not in schema:
        return "map"
    text = " or ".join(kind) if isinstance(kind, list) else str(kind)
    return text + _bounds(schema)


def _bounds(schema: Mapping[str, Json]) -> str:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is None and high is None:
        return ""
    left = "" if low is None else f"{low} {'<' if 'exclusiveMinimum' in schema else '≤'} "
    right = "" if high is None else f" {'<' if 'exclusiveMaximum' in schema else '≤'} {high}"
    return f", {left}x{right}"


def _default(schema: Mapping[str, Json]) -> str:
    if "default" not in schema:
        return ""
    return f"`{json.dumps(schema['default'], ensure_ascii=False)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def schema_table(schema: Mapping[str, Json], prefix: str = "") -> list[str]:
    """A Markdown table of every key of ``schema``."""
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in schema_rows(schema, prefix)]
    return lines


def render_page(name: SchemaName) -> str:
    """The Markdown reference page of one schema."""
    schema = load_schema(name)
    source = f"ishiki_host/config/schemas/{name}.schema.json"
    lines = [
        f"# `{schema['title']}` reference",
        "",
        _HEADER.format(source=source, command=COMMAND),
        "",
        schema["description"],
        "",
        *schema_table(schema),
        "",
    ]
    return "\n".join(lines)


def write_reference(directory: Path) -> list[Path]:
    """Write every page into ``directory``; return the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, page in PAGES.items():
        path = directory / page
        path.write_text(render_page(name), encoding="utf-8")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ishiki_host.config.reference DIR``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m ishiki_host.config.reference DIR", file=sys.stderr)
        return 2
    for path in write_reference(Path(args[0])):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
