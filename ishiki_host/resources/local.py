"""The ``local://`` scheme: files and directories under the runtime home, and nothing outside it.

``local://notes/today.md`` is ``<home>/notes/today.md``; ``local://`` lists the home. The shared URL parser
already refuses ``..``, ``.``, absolute paths (an empty first segment), NUL and encoded separators. Here the
path is resolved with every symlink followed and must still lie inside the home, else
``invalid_resource_uri``; a symlink loop is refused the same way. Only regular files and directories are
served (a FIFO or a device could block or never end). The file is opened without following a final symlink
and must be the very file that was checked (same device and inode), so swapping a symlink in between does
not lead outside.

The host's own state in the home is hidden: names matching ``hidden`` (by default the fact log, lock files and
temporary files) are neither listed nor read, even through a symlink, and look missing (``not_found``): a turn
of any trust level can call ``read``, and the fact log holds what other turns saw.

Folders another scheme serves (``owned``: ``artifacts`` by ``artifact://``, ``assets`` by ``asset://``) are not
served here either, even through a symlink: that scheme checks each file's own level (an owner-only tool's
archived output is the owner's), and ``local://`` would skip the check. They are left out of listings, and a
read names the scheme to use instead (``forbidden``).

Hard links are not detected: a hard link looks like any file, and the runtime home is written only by the
host (assets, artifacts, the fact log). Confining a directory other tools write into is the workspace
extension's job, which refuses links there.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

import anyio

from ishiki_host.errors import ResourceError
from ishiki_host.resources.center import Resource, ResourceRequest
from ishiki_host.resources.sniff import guess_media_type

__all__ = ["DEFAULT_HIDDEN", "DEFAULT_OWNED", "LocalFiles"]

DEFAULT_HIDDEN = ("facts.jsonl*", "*.lock", ".tmp-*")
DEFAULT_OWNED: Mapping[str, str] = {"artifacts": "artifact", "assets": "asset"}
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class LocalFiles:
    """The ``local://`` handler of one runtime, confined to ``home``; ``hidden`` are glob patterns of names,
    ``owned`` the home's top folders another scheme serves (folder name: scheme)."""

    views: tuple[str, ...] = ()

    def __init__(self, home: Path, *, hidden: Iterable[str] = DEFAULT_HIDDEN, owned: Mapping[str, str] = DEFAULT_OWNED):
        self.home = Path(home)
        self.hidden = tuple(hidden)
        self.owned = dict(owned)

    def _is_hidden(self, parts: Iterable[str]) -> bool:
        return any(fnmatch.fnmatchcase(part, pattern) for part in parts for pattern in self.hidden)

    async def read(self, request: ResourceRequest) -> Resource:
        """Serve a file (bytes), a directory (a listing) or, for ``meta``, their description."""
        return await anyio.to_thread.run_sync(self._read, request)

    def _read(self, request: ResourceRequest) -> Resource:
        shown = str(request.url.bare())
        path, info = self._resolve(request.url.segments, shown)
        name = request.url.segments[-1] if request.url.segments else None
        if stat.S_ISDIR(info.st_mode):
            meta = {"kind": "directory", "modified": info.st_mtime}
            if not request.wants_content:
                return Resource(media_type="inode/directory", name=name, meta=meta)
            top = os.path.realpath(path) == os.path.realpath(self.home)
            listing = "\n".join(
                entry
                for entry in _listing(path)
                if not self._is_hidden([entry.rstrip("/")]) and not (top and entry.rstrip("/") in self.owned)
            )
            return Resource(text=listing, media_type="inode/directory", name=name, meta=meta)
        meta = {"kind": "file", "modified": info.st_mtime}
        if not request.wants_content:
            return Resource(media_type=guess_media_type(name), size=info.st_size, name=name, meta=meta)
        if info.st_size > request.max_bytes:
            raise ResourceError("too_large", f"{shown} is {info.st_size} bytes; the limit is {request.max_bytes}")
        return Resource(data=_read_checked(path, info, request.max_bytes, shown), name=name, meta=meta)

    def _resolve(self, segments: tuple[str, ...], shown: str) -> tuple[str, os.stat_result]:
        root = os.path.realpath(self.home)
        target = os.path.realpath(os.path.join(root, *segments))
        if not _inside(target, root):
            raise ResourceError("invalid_resource_uri", f"{shown} leads outside the runtime home (a symlink)")
        relative = os.path.relpath(target, root).split(os.sep)
        if self._is_hidden(segments) or self._is_hidden(relative):
            raise ResourceError("not_found", f"{shown} does not exist")
        owner = self.owned.get(relative[0]) or (self.owned.get(segments[0]) if segments else None)
        if owner is not None:
            raise ResourceError("forbidden", f"{shown} is served by {owner}://, which checks who may read each file")
        try:
            info = os.stat(target)
        except (FileNotFoundError, NotADirectoryError):  # NotADirectory: a path that goes on past a file
            raise ResourceError("not_found", f"{shown} does not exist") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ResourceError("invalid_resource_uri", f"{shown} is a symlink loop") from None
            raise ResourceError("read_failed", f"{shown}: {exc.strerror}") from None
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            raise ResourceError("invalid_resource_uri", f"{shown} is not a regular file or a directory")
        return target, info


def _read_checked(path: str, expected: os.stat_result, limit: int, shown: str) -> bytes:
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ResourceError("invalid_resource_uri", f"{shown} changed into a symlink while being read") from None
        raise ResourceError("read_failed", f"{shown}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if (info.st_dev, info.st_ino) != (expected.st_dev, expected.st_ino) or not stat.S_ISREG(info.st_mode):
            raise ResourceError("invalid_resource_uri", f"{shown} changed while being read")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ResourceError("too_large", f"{shown} is larger than {limit} bytes")
    return data


def _listing(path: str) -> list[str]:
    with os.scandir(path) as scan:
        return sorted(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else "") for entry in scan)
