"""The per-turn policy stage of the tool surface: plugin switches, then trust.

``switches_stage(services, profile_id)`` is a ``ToolSurface`` stage the runtime inserts after ``extensions``: it
drops the tools switched off for the profile (``/tools disable NAME``, stored in ``plugin_settings``; the kernel's
open tools always stay) and the tools above the turn's trust level (``tools_for``). Later stages (codemode,
toolsearch) therefore never wrap a tool the turn may not use. The agent enforces trust again when a tool is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ishiki_host.runtime.switches import enabled_tools
from ishiki_host.runtime.trust import tools_for

if TYPE_CHECKING:
    from ishiki_host.core.tools import Tool
    from ishiki_host.plugins.services import HostServices
    from ishiki_host.runtime.surface import SurfaceContext, SurfaceStage

__all__ = ["SWITCHES_STAGE", "switches_stage"]

SWITCHES_STAGE = "switches"


def switches_stage(services: HostServices, profile_id: str) -> SurfaceStage:
    """The stage filtering a profile's turns' tools by its switches and the turn's trust."""

    async def stage(tools: list[Tool], context: SurfaceContext) -> list[Tool]:
        return tools_for(context.trust, await enabled_tools(services.memory, profile_id, tools))

    return stage
