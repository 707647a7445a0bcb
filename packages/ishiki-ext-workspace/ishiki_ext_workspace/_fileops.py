"""The file operations behind the tools and the scheme. Blocking: call them through ``anyio.to_thread``.

Every path goes through ``_confine.resolve``. Writes are atomic: a temporary file in the same directory,
written, fsynced, then renamed over the name and the directory fsynced, so a reader (or a crash) only ever
sees the old file or the new one. Writes and edits of one file hold its lock (``_locks``), so concurrent
writers end with one whole version (the last to rename wins) and concurrent edits each apply.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_ext_workspace._confine import Target, open_checked, open_dir, resolve
from ishiki_ext_workspace._locks import file_locks
from ishiki_ext_workspace._tree import TEMP_PREFIX, glob_matcher, walk_tree
from ishiki_host import guess_media_type
from ishiki_host.errors import ResourceError

if TYPE_CHECKING:
    from ishiki_ext_workspace._paths import Location

__all__ = [
    "Entry",
    "Listing",
    "WriteOutcome",
    "decode_utf8",
    "delete_path",
    "describe",
    "file_key",
    "list_entries",
    "read_bytes",
    "read_limited",
    "refreshed",
    "replace_file",
    "resolve_location",
    "write_bytes",
]


@dataclass(frozen=True, slots=True)
class Entry:
    """One listed entry: its path from the listed directory (``()``: the listed file itself), kind and size."""

    rel: tuple[str, ...]
    kind: str
    size: int | None = None


@dataclass(frozen=True, slots=True)
class Listing:
    """A listing: the entries (capped at the limit) and whether more were left out."""

    entries: tuple[Entry, ...]
    truncated: bool


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    """What a write did: its size, and the size of the file it replaced (``None``: a new file)."""

    size: int
    previous: int | None


def resolve_location(location: Location, **kwargs: bool) -> contextlib.AbstractContextManager[Target]:
    """``_confine.resolve`` for a location (see there for ``follow_final`` and ``make_dirs``)."""
    mount = location.mount
    return resolve(mount.real, location.segments, location.shown, aliases=mount.aliases, **kwargs)


def file_key(target: Target) -> tuple[int, int, str]:
    """The lock key of a target (its directory's device and inode, and its name)."""
    parent = os.fstat(target.dir_fd)
    return parent.st_dev, parent.st_ino, target.name or ""


def refreshed(target: Target) -> Target:
    """The target with its status read again (under its lock, another writer may have replaced it)."""
    assert target.name is not None
    try:
        info = os.stat(target.name, dir_fd=target.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        info = None
    return Target(target.dir_fd, target.name, info, target.real)


def describe(location: Location, *, sniff: bool = True) -> tuple[os.stat_result, bytes]:
    """The status of what ``location`` names (links followed) and, with ``sniff``, a readable file's first bytes."""
    with resolve_location(location) as target:
        if target.info is None:
            raise ResourceError("not_found", f"{location.shown} does not exist")
        if not sniff or not stat.S_ISREG(target.info.st_mode) or target.info.st_nlink > 1:
            return target.info, b""
        fd = open_checked(target, location.shown)
        with os.fdopen(fd, "rb") as handle:
            return target.info, handle.read(64)


def read_limited(fd: int, info: os.stat_result, limit: int, shown: str) -> bytes:
    """The bytes of an open file (closed here); ``too_large`` with its size and type when over ``limit``."""
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > limit:
            media_type = guess_media_type(shown.rsplit("/", 1)[-1], handle.read(64))
            raise ResourceError(
                "too_large",
                f"{shown} is {info.st_size:,} bytes ({media_type}); files over {limit:,} bytes are not read "
                "(max_file_bytes)",
            )
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ResourceError("too_large", f"{shown} grew past {limit:,} bytes while it was read")
    return data


def read_bytes(location: Location, limit: int) -> tuple[bytes, os.stat_result]:
    """The content of a regular file (see ``read_limited``) and its status."""
    with resolve_location(location) as target:
        fd = open_checked(target, location.shown)
        assert target.info is not None
        return read_limited(fd, target.info, limit, location.shown), target.info


def list_entries(location: Location, *, depth: int, glob: str | None, limit: int) -> Listing:
    """Entries under a directory (or the file itself), depth first in name order, at most ``limit``."""
    matches = glob_matcher(glob)
    with resolve_location(location) as target:
        if target.info is not None and not stat.S_ISDIR(target.info.st_mode):
            kind = "file" if stat.S_ISREG(target.info.st_mode) else "other"
            return Listing((Entry((), kind, target.info.st_size),), False)
        fd = open_dir(target, location.shown)
        try:
            found: list[Entry] = []
            for node in walk_tree(fd, depth):
                if not matches(node.rel):
                    continue
                if len(found) == limit:
                    return Listing(tuple(found), True)
                kind = node.kind
                size = node.entry.stat(follow_symlinks=False).st_size if kind == "file" else None
                found.append(Entry(node.rel, kind, size))
            return Listing(tuple(found), False)
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def replace_file(dir_fd: int, name: str, data: bytes, mode: int | None) -> None:
    """Atomically replace (or create) ``name`` in ``dir_fd`` with ``data``; ``mode`` keeps the old permissions."""
    temp = f"{TEMP_PREFIX}{secrets.token_hex(8)}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, stat.S_IMODE(mode))
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)


def _writable_target(target: Target, shown: str) -> None:
    if target.name is None or (target.info is not None and stat.S_ISDIR(target.info.st_mode)):
        raise ResourceError("invalid_resource_uri", f"{shown} is a directory; give a file path")
    if target.info is not None and not stat.S_ISREG(target.info.st_mode):
        raise ResourceError("invalid_resource_uri", f"{shown} is not a regular file (a device, FIFO or socket)")


def write_bytes(location: Location, data: bytes) -> WriteOutcome:
    """Create or replace a file with ``data``, creating missing directories."""
    with resolve_location(location, make_dirs=True) as target:
        _writable_target(target, location.shown)
        assert target.name is not None
        with file_locks.hold(file_key(target)):
            current = refreshed(target).info
            replace_file(target.dir_fd, target.name, data, current.st_mode if current is not None else None)
        return WriteOutcome(len(data), current.st_size if current is not None else None)


def delete_path(location: Location) -> str:
    """Delete a file, a symlink (not its target) or an empty directory; returns which it was."""
    with resolve_location(location, follow_final=False) as target:
        if target.name is None:
            raise ResourceError("invalid_resource_uri", f"{location.shown} is a mount root and cannot be deleted")
        if target.info is None:
            raise ResourceError("not_found", f"{location.shown} does not exist")
        with file_locks.hold(file_key(target)):
            try:
                if stat.S_ISDIR(target.info.st_mode):
                    os.rmdir(target.name, dir_fd=target.dir_fd)
                    kind = "directory"
                else:
                    os.unlink(target.name, dir_fd=target.dir_fd)
                    kind = "symlink" if stat.S_ISLNK(target.info.st_mode) else "file"
            except FileNotFoundError:
                raise ResourceError("not_found", f"{location.shown} does not exist") from None
            except OSError as exc:
                if exc.errno == errno.ENOTEMPTY:
                    raise ResourceError(
                        "invalid_resource_uri", f"{location.shown} is a directory that is not empty"
                    ) from None
                raise ResourceError("read_failed", f"{location.shown}: {exc.strerror}") from None
            os.fsync(target.dir_fd)
        return kind


def decode_utf8(data: bytes, shown: str) -> tuple[str, bytes]:
    """The text of a UTF-8 file and its BOM (``b""`` when none); binary content is refused."""
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    try:
        text = data[len(bom) :].decode("utf-8")
    except UnicodeDecodeError:
        text = "\x00"
    if "\x00" in text:
        media_type = guess_media_type(shown.rsplit("/", 1)[-1], data)
        raise ResourceError("invalid_resource_uri", f"{shown} is binary ({media_type}, {len(data):,} bytes)")
    return text, bom
