"""The runtime layer: the ``Host``, routes and ``AgentRuntime``; shaped events, runtime keys and homes, each
runtime's resource center. See ``docs/runtime.md``.
"""

import importlib
from typing import TYPE_CHECKING, Any

from ishiki_host.runtime.events import (
    Attachment,
    ChannelKind,
    EventKind,
    IshikiEvent,
    Quote,
    User,
    channel_id,
    parse_channel_id,
    parse_sid,
)
from ishiki_host.runtime.paths import RuntimeKey, RuntimeMode, escape_segment, runtime_dir
from ishiki_host.runtime.resources import (
    ArchivedOutput,
    AssetFetcher,
    AssetFetchers,
    Blob,
    ReadResult,
    Resource,
    ResourceCenter,
    ResourceRequest,
    ResourceURL,
    RuntimeResources,
    SchemeHandler,
    create_runtime_resources,
    format_resource_url,
    parse_resource_url,
)

if TYPE_CHECKING:
    from ishiki_host.runtime.host import Host
    from ishiki_host.runtime.host_setup import ReloadReport
    from ishiki_host.runtime.parts import EngineUse, HostServices, ProfileParts, ProviderCache
    from ishiki_host.runtime.routes import ProfileRoute, RouteTable
    from ishiki_host.runtime.runtime import AgentRuntime, InboundFilter
    from ishiki_host.runtime.surface import SurfaceContext, ToolSurface
    from ishiki_host.runtime.turnstate import TurnReport, TurnState

# The host-level names are imported on first use: the kernel tools import this package's resource modules,
# and the runtime imports the kernel tools.
_LAZY = {
    "Host": "host",
    "ReloadReport": "host_setup",
    "EngineUse": "parts",
    "HostServices": "parts",
    "ProfileParts": "parts",
    "ProviderCache": "parts",
    "ProfileRoute": "routes",
    "RouteTable": "routes",
    "AgentRuntime": "runtime",
    "InboundFilter": "runtime",
    "SurfaceContext": "surface",
    "ToolSurface": "surface",
    "TurnReport": "turnstate",
    "TurnState": "turnstate",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "AgentRuntime",
    "ArchivedOutput",
    "AssetFetcher",
    "AssetFetchers",
    "Attachment",
    "Blob",
    "ChannelKind",
    "EngineUse",
    "EventKind",
    "Host",
    "HostServices",
    "InboundFilter",
    "IshikiEvent",
    "ProfileParts",
    "ProfileRoute",
    "ProviderCache",
    "Quote",
    "ReadResult",
    "ReloadReport",
    "Resource",
    "ResourceCenter",
    "ResourceRequest",
    "ResourceURL",
    "RouteTable",
    "RuntimeKey",
    "RuntimeMode",
    "RuntimeResources",
    "SchemeHandler",
    "SurfaceContext",
    "ToolSurface",
    "TurnReport",
    "TurnState",
    "User",
    "channel_id",
    "create_runtime_resources",
    "escape_segment",
    "format_resource_url",
    "parse_channel_id",
    "parse_resource_url",
    "parse_sid",
    "runtime_dir",
]
