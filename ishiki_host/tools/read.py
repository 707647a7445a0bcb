"""The kernel ``read(url)`` tool: one page of any resource the runtime's center serves.

Pages hold at most 2,000 lines and 30,000 characters (the center's limits). ``lines`` (or a ``#L10-L20``
fragment) selects lines; a page that does not end the selection says how to continue (``offset``, and
``column`` inside a line longer than a page). ``?view=meta`` describes a resource without reading it; binary
content is described, never shown. The tool is ``untrusted``: every sender's reply may need to read the
runtime's own resources (asset URLs of the message being answered, artifacts of the turn's tool calls). What
it may read is decided per scheme: each read carries the running turn's trust level (``trust()``), and the
resource center refuses a scheme, or an artifact, that needs more (``forbidden``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host.core.tools import Tool, ToolResult
from ishiki_host.errors import ResourceError
from ishiki_host.resources.paging import (
    page_lines,
    parse_line_fragment,
    parse_line_selector,
    split_lines,
)

if TYPE_CHECKING:
    from ishiki_host.core.tools import ToolContext, TrustLevel
    from ishiki_host.resources.center import ReadResult, ResourceCenter

__all__ = [
    "READ_DESCRIPTION",
    "READ_PARAMETERS",
    "continuation_hint",
    "make_read_tool",
    "page_lines",
    "parse_line_fragment",
    "parse_line_selector",
    "parse_read_arguments",
    "render_read_result",
    "split_lines",
]

READ_DESCRIPTION = (
    "Read a resource by URL (asset:// attachments, artifact:// archived tool outputs, local:// runtime files, "
    "and schemes extensions add). Returns one page of at most 2,000 lines / 30,000 characters; when more "
    "remains, the result says which offset to call read with next. Add ?view=meta to the URL to describe a "
    "resource without reading it. Binary content is described, not shown."
)
READ_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "The resource URL, e.g. local://notes.txt or asset://<id>.jpg."},
        "lines": {
            "type": "string",
            "description": "Lines to read, counting from 1: '10-20', '42', '100-' (to the end), '-50' (the last 50).",
        },
        "offset": {
            "type": "integer",
            "minimum": 1,
            "description": "The line to continue from, as a previous result said.",
        },
        "column": {
            "type": "integer",
            "minimum": 1,
            "description": "With offset, the character of that line to continue from (for very long lines).",
        },
    },
    "required": ["url"],
    "additionalProperties": False,
}


def _whole_number(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ResourceError("invalid_selector", f"{name}={value!r}: expected a whole number from 1")
    return value


def parse_read_arguments(args: Mapping[str, Any]) -> tuple[str, str | int | None, int | None, int | None]:
    """``(url, lines, offset, column)`` from a model's arguments; ``ResourceError`` says what is wrong."""
    unknown = sorted(set(args) - {"url", "lines", "offset", "column"})
    if unknown:
        raise ResourceError(
            "invalid_selector",
            f"unknown argument(s) {', '.join(unknown)}; read takes url (add ?view=meta to it), lines, offset, column",
        )
    url = args.get("url")
    if not isinstance(url, str) or not url.strip():
        raise ResourceError("invalid_resource_uri", "url is required, e.g. local://notes.txt")
    lines = args.get("lines")
    if lines is not None and (isinstance(lines, bool) or not isinstance(lines, str | int)):
        raise ResourceError("invalid_selector", f"lines={lines!r}: expected text like '10-20'")
    column = _whole_number("column", args.get("column"))
    return url, lines if lines != "" else None, _whole_number("offset", args.get("offset")), column


def continuation_hint(result: ReadResult) -> str | None:
    """The sentence telling the model how to read on, or ``None`` when the page ends the selection."""
    page = result.page
    if page is None or page.next_offset is None:
        return None
    keep = f', lines="{result.lines}"' if result.lines else ""
    if page.next_column is not None:
        return (
            f"… line {page.next_offset} continues; call read with "
            f"offset={page.next_offset}, column={page.next_column}{keep}"
        )
    more = page.remaining_lines
    return f"… {more:,} more line{'s' if more != 1 else ''}; call read with offset={page.next_offset}{keep}"


def _header(result: ReadResult) -> str:
    parts = [result.url, result.media_type]
    page = result.page
    if result.binary:
        size = f"{result.size:,} bytes" if result.size is not None else "size unknown"
        parts += [size, "binary: content not shown"]
        if result.name:
            parts.insert(1, result.name)
    elif page is not None and page.total_lines == 0:
        parts.append("empty")
    elif page is not None and page.next_offset is None and page.first_line == 1 and page.first_column == 1:
        parts.append(f"{page.total_lines:,} line{'s' if page.total_lines != 1 else ''}")
    elif page is not None:
        span = f"lines {page.first_line:,}-{page.last_line:,} of {page.total_lines:,}"
        parts.append(span + (f" (from column {page.first_column:,})" if page.first_column != 1 else ""))
    return "[" + " · ".join(parts) + "]"


def render_read_result(result: ReadResult) -> str:
    """The text the model sees: a one-line header, the page, and how to continue when more remains."""
    out = [_header(result)]
    if result.text:
        out.append(result.text)
    hint = continuation_hint(result)
    if hint:
        out.append(hint)
    return "\n".join(out)


def _host_reads() -> TrustLevel | None:
    return None


def make_read_tool(center: ResourceCenter, *, trust: Callable[[], TrustLevel | None] = _host_reads) -> Tool:
    """The kernel ``read`` tool over ``center`` (trust ``untrusted``).

    ``trust()`` gives the running turn's level, which every read carries (``None``: no check, for tools used
    outside a runtime's turns).
    """

    async def handler(args: Mapping[str, Any], context: ToolContext) -> ToolResult:
        try:
            url, lines, offset, column = parse_read_arguments(args)
            result = await center.read(url, lines=lines, offset=offset, column=column, trust=trust())
        except ResourceError as exc:
            return ToolResult(content=f"read failed: {exc}", is_error=True, data={"error": exc.code})
        return ToolResult(content=render_read_result(result), data=result.to_dict())

    return Tool(
        name="read",
        description=READ_DESCRIPTION,
        handler=handler,
        parameters=READ_PARAMETERS,
        trust="untrusted",
        kind="action",
    )
