"""What a server offers, read in full: tools, resources, resource templates and its instructions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp.types as types

if TYPE_CHECKING:
    from mcp import Client

__all__ = ["MAX_PAGES", "Listing", "list_all"]

MAX_PAGES = 100
"""A server whose pagination never ends is cut off here."""


@dataclass(frozen=True, slots=True)
class Listing:
    """What a server offers: tools, resources, resource templates and its instructions."""

    tools: tuple[types.Tool, ...] = ()
    resources: tuple[types.Resource, ...] = ()
    templates: tuple[types.ResourceTemplate, ...] = ()
    instructions: str | None = None


async def list_all(client: Client) -> Listing:
    """Every page of every list the server's capabilities announce."""
    caps = client.server_capabilities
    tools: list[types.Tool] = []
    resources: list[types.Resource] = []
    templates: list[types.ResourceTemplate] = []
    if caps.tools is not None:
        tools = await _pages(lambda cursor: client.list_tools(cursor=cursor), "tools")
    if caps.resources is not None:
        resources = await _pages(lambda cursor: client.list_resources(cursor=cursor), "resources")
        templates = await _pages(lambda cursor: client.list_resource_templates(cursor=cursor), "resource_templates")
    return Listing(tuple(tools), tuple(resources), tuple(templates), client.instructions)


async def _pages(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if cursor is None:
            break
    return items
