"""The ``workspace://`` scheme: ``workspace://<mount>/<path>`` through the runtime's resource center.

``workspace://`` lists the mounts; ``workspace://<mount>`` and its directories are listings (one name a line,
directories ending in ``/``); a file is its bytes, which the center pages, selects lines of (``#L10-L20``)
and describes when binary. ``?view=meta`` describes without reading. Files over ``max_file_bytes`` (or the
center's own limit) are refused with their size and type; confinement is ``_confine``'s.
"""

from __future__ import annotations

import stat
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_ext_workspace._fileops import describe, list_entries, read_bytes
from ishiki_ext_workspace._paths import locate_url
from ishiki_host import Resource, ResourceRequest, guess_media_type

if TYPE_CHECKING:
    from ishiki_ext_workspace._config import Settings
    from ishiki_ext_workspace._paths import Location

__all__ = ["MAX_LISTED", "WorkspaceScheme"]

MAX_LISTED = 10_000
_DIRECTORY = "inode/directory"


class WorkspaceScheme:
    """The ``workspace://`` handler of one runtime's workspace."""

    views: tuple[str, ...] = ()

    def __init__(self, settings: Settings):
        self.settings = settings

    async def read(self, request: ResourceRequest) -> Resource:
        """A listing, a file's bytes or, for ``meta``, their description."""
        return await anyio.to_thread.run_sync(self._read, request)

    def _read(self, request: ResourceRequest) -> Resource:
        location = locate_url(request.url, self.settings)
        if location is None:
            return self._mounts(request)
        name = location.segments[-1] if location.segments else location.mount.name
        info, head = describe(location, sniff=not request.wants_content)
        meta: dict[str, Any] = {"mount": location.mount.name, "mode": location.mount.mode}
        meta["modified"] = info.st_mtime
        if stat.S_ISDIR(info.st_mode):
            meta["kind"] = "directory"
            text = self._listing(location) if request.wants_content else None
            return Resource(text=text, media_type=_DIRECTORY, name=name, meta=meta)
        meta["kind"] = "file" if stat.S_ISREG(info.st_mode) else "special"
        if info.st_nlink > 1:
            meta["hardLinks"] = info.st_nlink
        if not request.wants_content:
            return Resource(media_type=guess_media_type(name, head or None), size=info.st_size, name=name, meta=meta)
        limit = min(request.max_bytes, self.settings.max_file_bytes)
        data, info = read_bytes(location, limit)
        return Resource(data=data, name=name, size=info.st_size, meta=meta)

    def _listing(self, location: Location) -> str:
        listing = list_entries(location, depth=1, glob=None, limit=MAX_LISTED)
        lines = [entry.rel[-1] + ("/" if entry.kind == "dir" else "") for entry in listing.entries]
        if listing.truncated:
            lines.append(f"… more than {MAX_LISTED:,} entries; list_files with a glob narrows them")
        return "\n".join(lines)

    def _mounts(self, request: ResourceRequest) -> Resource:
        meta = {"kind": "mounts", "mounts": {m.name: m.mode for m in self.settings.mounts}}
        if not request.wants_content:
            return Resource(media_type=_DIRECTORY, name="workspace", meta=meta)
        lines = [f"{m.name}/ ({'read-write' if m.writable else 'read-only'})" for m in self.settings.mounts]
        return Resource(text="\n".join(lines), media_type=_DIRECTORY, name="workspace", meta=meta)
