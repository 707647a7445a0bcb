"""The runtime layer: shaped events, runtime keys and homes, and each runtime's resource center.

(The Host, routes and ``AgentRuntime`` build on these.)
"""

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

__all__ = [
    "ArchivedOutput",
    "AssetFetcher",
    "AssetFetchers",
    "Attachment",
    "Blob",
    "ChannelKind",
    "EventKind",
    "IshikiEvent",
    "Quote",
    "ReadResult",
    "Resource",
    "ResourceCenter",
    "ResourceRequest",
    "ResourceURL",
    "RuntimeKey",
    "RuntimeMode",
    "RuntimeResources",
    "SchemeHandler",
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
