"""The per-turn policy stage of the tool surface: plugin switches, then trust.

``switches_stage(runtime)`` is a ``ToolSurface`` stage the runtime inserts after ``extensions``: it drops the
tools switched off for the profile (``/tools disable NAME``, stored in ``plugin_settings``; the kernel's open
tools always stay) and the tools above the turn's trust level (``tools_for``). Later stages (codemode,
toolsearch) therefore never wrap a tool the turn may not use. The agent enforces trust again at dispatch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ishiki_host.runtime.switches import enabled_tools
from ishiki_host.runtime.trust import tools_for

if TYPE_CHECKING:
    from ishiki_host.core.tools import Tool
    from ishiki_host.runtime.runtime import AgentRuntime
    from ishiki_host.runtime.surface import SurfaceContext, SurfaceStage

__all__ = ["SWITCHES_STAGE", "switches_stage"]

SWITCHES_STAGE = "switches"


def switches_stage(runtime: AgentRuntime) -> SurfaceStage:
    """The stage filtering ``runtime``'s turns' tools by its profile's switches and the turn's trust."""

    async def stage(tools: list[Tool], context: SurfaceContext) -> list[Tool]:
        store = runtime.services.get("memory")
        return tools_for(context.trust, await enabled_tools(store, runtime.profile.id, tools))

    return stage
