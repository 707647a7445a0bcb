"""The runtime layer: ``AgentRuntime`` (one persona at one address), what it is made of (``parts``), and
the pieces each turn is assembled from: trust, plugin switches, the tool surface, the prompt, the command
layer. The ``Host`` that composes runtimes is ``ishiki_host.host``. See ``docs/runtime.md``.
"""

from ishiki_host.plugins.runtime_api import TurnReport
from ishiki_host.runtime.parts import EngineUse, ProfileParts, ProviderCache, SharedParts, profile_parts
from ishiki_host.runtime.runtime import AgentRuntime, InboundFilter
from ishiki_host.runtime.surface import SurfaceContext, ToolSurface
from ishiki_host.runtime.turnstate import TurnState

__all__ = [
    "AgentRuntime",
    "EngineUse",
    "InboundFilter",
    "ProfileParts",
    "ProviderCache",
    "SharedParts",
    "SurfaceContext",
    "ToolSurface",
    "TurnReport",
    "TurnState",
    "profile_parts",
]
