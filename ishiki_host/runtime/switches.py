"""The plugin switches of a turn: the tools and extensions a profile's ``/tools`` and ``/extensions`` turned off,
and the channels ``/channels`` turned off.

The switches live in ``plugin_settings`` and are read live, one query each per turn, so a switch applies from
the next turn without a restart. The kernel tools a reply needs (``OPEN_TOOLS``) are never switched off. Without
a memory database there are no switches: everything is on. A channel switch is named by the account
(``platform:selfId``) and read for every inbound event by the command layer (``runtime.gate``), so it applies
from the next message (the repository remembers the answer until a switch is written: no query per message).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

from ishiki_host.core.tools import Tool
from ishiki_host.tools.kernel import OPEN_TOOLS

if TYPE_CHECKING:
    from ishiki_host.store.memory_store import MemoryStore

__all__ = ["channel_enabled", "enabled_extensions", "enabled_tools"]

ToolT = TypeVar("ToolT", bound=Tool)


async def enabled_tools(store: MemoryStore | None, profile: str, tools: Sequence[ToolT]) -> list[ToolT]:
    """``tools`` without those switched off for ``profile`` (the kernel's open tools always stay)."""
    if store is None:
        return list(tools)
    switches = await store.plugin_settings.effective("tool", profile=profile)
    return [t for t in tools if t.name in OPEN_TOOLS or switches.get(t.name, True)]


async def enabled_extensions(store: MemoryStore | None, profile: str, names: Sequence[str]) -> list[str]:
    """``names`` (extension names, in ``extends`` order) without those switched off for ``profile``."""
    if store is None:
        return list(names)
    switches = await store.plugin_settings.effective("extension", profile=profile)
    return [name for name in names if switches.get(name, True)]


async def channel_enabled(store: MemoryStore | None, profile: str, sid: str) -> bool:
    """Whether ``profile`` serves the channel account ``sid`` (``platform:selfId``): on unless switched off."""
    if store is None:
        return True
    return await store.plugin_settings.is_enabled("channel", sid, profile=profile)
