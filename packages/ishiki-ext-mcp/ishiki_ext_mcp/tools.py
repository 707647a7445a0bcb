"""A server's MCP tools as host ``Tool`` objects, and their results as ``ToolResult``.

Each tool is offered as ``<server>__<tool>`` (``ishiki_ext_mcp.names``) with the server's description and
input schema, at the server's ``trust`` level. A call goes to the server under ``timeout_ms``; a result the
server marks ``isError`` stays an error result, and a server that is down, times out or answers a JSON-RPC
error raises ``MCPCallFailed``, which the host turns into an error result too.

Content is rendered as text: text blocks as they are; images and audio described (type and size); resource
links and embedded resources with their ``mcp://`` URL, so the model can ``read`` them; structured content
as JSON when there is no text. ``ToolResult.data`` keeps the structured content when the server sent some.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import mcp.types as types
from ishiki_host import Tool, ToolResult

from ishiki_ext_mcp.errors import CallError, MCPCallFailed, ServerUnavailable
from ishiki_ext_mcp.names import tool_names
from ishiki_ext_mcp.resources import resource_url

if TYPE_CHECKING:
    from ishiki_host import ToolContext

    from ishiki_ext_mcp.runner import ServerRunner

__all__ = ["make_tools", "parameters", "render_result"]


def make_tools(runner: ServerRunner) -> list[Tool]:
    """The host tools of ``runner``'s current listing, in the server's order."""
    listed = {tool.name: tool for tool in runner.listing.tools}
    offered = tool_names(runner.name, list(listed))
    return [_tool(runner, name, listed[original]) for name, original in sorted(offered.items(), key=_order(listed))]


def _order(listed: Mapping[str, types.Tool]) -> Any:
    position = {name: i for i, name in enumerate(listed)}
    return lambda item: position[item[1]]


def _tool(runner: ServerRunner, offered: str, tool: types.Tool) -> Tool:
    original = tool.name
    description = tool.description or tool.title or f"The {original} tool of the MCP server {runner.name}."

    async def handler(arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            result = await runner.request(
                f"the call of {original}", lambda client: client.call_tool(original, dict(arguments))
            )
        except (ServerUnavailable, CallError) as exc:
            raise MCPCallFailed(str(exc)) from exc
        return render_result(result, runner.name)

    return Tool(offered, description, handler, parameters(tool.input_schema), trust=runner.spec.trust)


def parameters(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The server's input schema as providers want it: an object schema with ``properties``."""
    out = dict(schema or {})
    out["type"] = "object"
    out.setdefault("properties", {})
    return out


def render_result(result: types.CallToolResult, server: str) -> ToolResult:
    """The model-facing result of a tool call (see the module docstring)."""
    text = "\n".join(part for part in (_content(block, server) for block in result.content) if part)
    structured = result.structured_content
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    if result.is_error:
        return ToolResult(text or "the tool reported an error without saying why", is_error=True, data=structured)
    return ToolResult(text, data=structured if structured is not None else text)


def _content(block: object, server: str) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]"
    if isinstance(block, types.ResourceLink):
        about = f" ({block.description})" if block.description else ""
        return f"[resource {block.name}{about}: read {resource_url(server, block.uri)}]"
    if isinstance(block, types.EmbeddedResource):
        contents = block.resource
        url = resource_url(server, contents.uri)
        if isinstance(contents, types.TextResourceContents):
            return f"[resource {url}]\n{contents.text}"
        return f"[resource {url}: {contents.mime_type or 'binary'}, {_decoded_size(contents.blob)} bytes, not shown]"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
