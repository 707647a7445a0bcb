"""The resource center: one ``read`` over every scheme a runtime knows.

Each runtime owns a ``ResourceCenter``. The built-in schemes are ``asset://`` (captured inbound media),
``artifact://`` (archived large tool outputs) and ``local://`` (files under the runtime home);
extensions register more (``workspace://``, ``skill://``, ``mcp://``) with ``center.register(scheme, handler)``,
parsing nothing themselves: a handler gets a ``ResourceRequest`` holding the strictly parsed ``ResourceURL``.
``create_runtime_resources(home)`` builds a center with the built-ins registered.

Who may read what: ``asset://`` is open to every turn (what people sent in this conversation), ``artifact://``
too, but each artifact keeps the trust level of the tool that produced it and is refused to turns below it,
and ``local://`` (the runtime's files, its whole fact log among them) needs ``trusted``. Extension schemes
declare their own level (``trusted`` unless they say otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ishiki_host.resources.artifacts import ArchivedOutput, ArtifactStore
from ishiki_host.resources.assets import AssetFetcher, AssetFetchers, AssetStore, ByteSource
from ishiki_host.resources.center import (
    Blob,
    ReadResult,
    Resource,
    ResourceCenter,
    ResourceRequest,
    SchemeHandler,
)
from ishiki_host.resources.local import LocalFiles
from ishiki_host.resources.paging import (
    LineSelector,
    Page,
    page_lines,
    parse_line_fragment,
    parse_line_selector,
    split_lines,
)
from ishiki_host.resources.urls import ResourceURL, format_resource_url, parse_resource_url

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock

__all__ = [
    "ArchivedOutput",
    "ArtifactStore",
    "AssetFetcher",
    "AssetFetchers",
    "AssetStore",
    "Blob",
    "ByteSource",
    "LineSelector",
    "LocalFiles",
    "Page",
    "ReadResult",
    "Resource",
    "ResourceCenter",
    "ResourceRequest",
    "ResourceURL",
    "RuntimeResources",
    "SchemeHandler",
    "create_runtime_resources",
    "format_resource_url",
    "page_lines",
    "parse_line_fragment",
    "parse_line_selector",
    "parse_resource_url",
    "split_lines",
]


@dataclass(frozen=True, slots=True)
class RuntimeResources:
    """A runtime's resource center and its built-in stores (channels capture into ``assets``)."""

    center: ResourceCenter
    assets: AssetStore
    artifacts: ArtifactStore
    local: LocalFiles


def create_runtime_resources(
    home: Path, *, clock: Clock | None = None, fetchers: AssetFetchers | None = None
) -> RuntimeResources:
    """A center for the runtime whose home is ``home``, serving ``asset``, ``artifact`` and ``local``.

    ``fetchers`` is the host's shared registry of lazy-asset fetchers. Nothing is created on disk until
    something is captured or archived.
    """
    center = ResourceCenter()
    assets = AssetStore(Path(home, "assets"), fetchers=fetchers, clock=clock)
    artifacts = ArtifactStore(Path(home, "artifacts"), clock=clock)
    local = LocalFiles(Path(home))
    center.register("asset", assets, owner="the host", trust="untrusted")
    center.register("artifact", artifacts, owner="the host", trust="untrusted")  # each artifact checks its own
    center.register("local", local, owner="the host", trust="trusted")
    return RuntimeResources(center, assets, artifacts, local)
