"""Confinement: a path is resolved one component at a time, each opened relative to its parent's descriptor.

Resolving ``a/b/c`` inside a mount opens the mount root, then ``a`` relative to it, then ``b`` relative to
``a``, each with ``O_NOFOLLOW``, so no component is ever looked up by a full path that something could change
behind our back. Symlinks are resolved here, by hand: a link's target is read and walked the same way, ``..``
pops a directory we hold open, and a target that climbs above the mount root, or an absolute target that
does not lie under it, is refused (``invalid_resource_uri``). More than ``MAX_LINK_HOPS`` links in one path is
a loop. The walk ends with the descriptor of the directory that holds the last component, its name and its
status; the file itself is opened with ``O_NOFOLLOW`` relative to that descriptor and must be the very inode
that was checked.

Hard links cannot be followed back to their other names cheaply, so the rule is about what can leak: a
regular file with more than one link (``st_nlink > 1``) is never *read* (read_file, edit_file, search_files,
the ``workspace://`` scheme), since another of its names may lie outside the mount. Writing and deleting act
on the name only (a write replaces the name with a new file; the other names keep the old content), so they
cannot reach outside and are allowed.

POSIX only: it needs ``dir_fd`` support (Linux, macOS, the BSDs).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ishiki_host.errors import ResourceError

__all__ = [
    "DIR_FLAGS",
    "FILE_FLAGS",
    "MAX_LINK_HOPS",
    "Target",
    "check_readable",
    "open_checked",
    "open_dir",
    "resolve",
]

MAX_LINK_HOPS = 40
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Target:
    """Where a path leads: the open directory holding it, its name there and its status.

    ``name`` is ``None`` for the mount root itself (then ``dir_fd`` is the root). ``info`` is ``None`` when
    nothing has that name yet. ``real`` are the segments from the mount root once symlinks are resolved.
    """

    dir_fd: int
    name: str | None
    info: os.stat_result | None
    real: tuple[str, ...]


def _escape(shown: str, why: str) -> ResourceError:
    return ResourceError("invalid_resource_uri", f"{shown}: {why}")


class _Walk:
    """The directories held open while walking one path, innermost last."""

    def __init__(self, root_fd: int, aliases: Sequence[str], shown: str):
        self.fds = [root_fd]
        self.real: list[str] = []
        self.aliases = aliases
        self.shown = shown

    def close(self) -> None:
        """Close every directory held."""
        for fd in reversed(self.fds):
            os.close(fd)
        self.fds.clear()

    def up(self) -> None:
        """Step back to the parent directory (a ``..`` of a symlink's target); never above the mount root."""
        if not self.real:
            raise _escape(self.shown, "a symlink on the way leads outside the mount")
        os.close(self.fds.pop())
        self.real.pop()

    def enter(self, name: str, info: os.stat_result) -> None:
        """Open the subdirectory ``name``, which must still be the inode ``info`` describes."""
        fd = os.open(name, DIR_FLAGS, dir_fd=self.fds[-1])
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            os.close(fd)
            raise ResourceError("read_failed", f"{self.shown}: {name} changed while the path was resolved")
        self.fds.append(fd)
        self.real.append(name)

    def link_parts(self, name: str) -> list[str]:
        """The components a symlink's target adds; an absolute target restarts from the mount root."""
        target = os.readlink(name, dir_fd=self.fds[-1])
        if not target.startswith("/"):
            return target.split("/")
        relative = next((target[len(a) :] for a in self.aliases if target == a or target.startswith(a + "/")), None)
        if relative is None:
            raise _escape(self.shown, "a symlink on the way leads outside the mount")
        while len(self.fds) > 1:
            os.close(self.fds.pop())
        self.real.clear()
        return relative.split("/")

    def here(self) -> Target:
        """The directory the walk stands in, as a target."""
        if not self.real:
            return Target(self.fds[0], None, os.fstat(self.fds[0]), ())
        return Target(self.fds[-2], self.real[-1], os.fstat(self.fds[-1]), tuple(self.real))


def _walk(walk: _Walk, segments: Sequence[str], follow_final: bool, make_dirs: bool) -> Target:
    pending = deque(segments)
    hops = 0
    while pending:
        part = pending.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            walk.up()
            continue
        last = not pending
        try:
            info = os.stat(part, dir_fd=walk.fds[-1], follow_symlinks=False)
        except FileNotFoundError:
            if last:
                return Target(walk.fds[-1], part, None, (*walk.real, part))
            if not make_dirs:
                raise ResourceError("not_found", f"{walk.shown}: directory {part!r} does not exist") from None
            with contextlib.suppress(FileExistsError):  # made by someone else meanwhile: look again
                os.mkdir(part, dir_fd=walk.fds[-1])
            pending.appendleft(part)
            continue
        if stat.S_ISLNK(info.st_mode):
            if last and not follow_final:
                return Target(walk.fds[-1], part, info, (*walk.real, part))
            hops += 1
            if hops > MAX_LINK_HOPS:
                raise _escape(walk.shown, f"a symlink loop (more than {MAX_LINK_HOPS} links)")
            pending.extendleft(reversed(walk.link_parts(part)))
            continue
        if last:
            return Target(walk.fds[-1], part, info, (*walk.real, part))
        if not stat.S_ISDIR(info.st_mode):
            raise ResourceError("not_found", f"{walk.shown}: {part!r} is not a directory")
        walk.enter(part, info)
    return walk.here()


def _os_error(shown: str, exc: OSError) -> ResourceError:
    if exc.errno == errno.ELOOP:
        return _escape(shown, "a component turned into a symlink while the path was resolved")
    if exc.errno == errno.ENOTDIR:
        return ResourceError("not_found", f"{shown}: a component is not a directory")
    if exc.errno == errno.ENAMETOOLONG:
        return ResourceError("invalid_resource_uri", f"{shown}: a name is too long")
    return ResourceError("read_failed", f"{shown}: {exc.strerror or exc}")


@contextmanager
def resolve(
    root: str,
    segments: Sequence[str],
    shown: str,
    *,
    aliases: Sequence[str] = (),
    follow_final: bool = True,
    make_dirs: bool = False,
) -> Iterator[Target]:
    """Walk ``segments`` from the mount root ``root`` (a resolved path); the target is valid inside the block.

    ``aliases`` are absolute spellings of the root that absolute symlinks may use (``root`` is always one).
    ``follow_final=False`` stops at a final symlink (to delete the link itself); ``make_dirs`` creates
    missing directories on the way (to write a new file).
    """
    try:
        root_fd = os.open(root, DIR_FLAGS)
    except OSError as exc:
        why = f"the mount's directory cannot be opened ({exc.strerror})"
        raise ResourceError("unavailable", f"{shown}: {why}") from None
    walk = _Walk(root_fd, (root, *(a for a in aliases if a != root)), shown)
    try:
        try:
            target = _walk(walk, segments, follow_final, make_dirs)
        except OSError as exc:
            raise _os_error(shown, exc) from None
        yield target
    finally:
        walk.close()


def check_readable(info: os.stat_result | None, shown: str) -> os.stat_result:
    """``info`` if it is a regular file whose content may be read; else the error that says why not."""
    if info is None:
        raise ResourceError("not_found", f"{shown} does not exist")
    if stat.S_ISDIR(info.st_mode):
        raise ResourceError("not_found", f"{shown} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise ResourceError("invalid_resource_uri", f"{shown} is not a regular file (a device, FIFO or socket)")
    if info.st_nlink > 1:
        raise _escape(
            shown, f"refused: it has {info.st_nlink} hard links, and another of its names may lie outside the mount"
        )
    return info


def open_checked(target: Target, shown: str) -> int:
    """Open the target's regular file for reading; it must be the inode that was checked, with one link."""
    info = check_readable(target.info, shown)
    assert target.name is not None  # a mount root is a directory, refused above
    try:
        fd = os.open(target.name, FILE_FLAGS, dir_fd=target.dir_fd)
    except OSError as exc:
        raise _os_error(shown, exc) from None
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) or opened.st_nlink > 1:
        os.close(fd)
        raise ResourceError("read_failed", f"{shown} changed while it was opened")
    return fd


def open_dir(target: Target, shown: str) -> int:
    """A new descriptor of the target directory (the caller closes it)."""
    if target.info is None:
        raise ResourceError("not_found", f"{shown} does not exist")
    if not stat.S_ISDIR(target.info.st_mode):
        raise ResourceError("not_found", f"{shown} is not a directory")
    name = target.name if target.name is not None else "."
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=target.dir_fd)
    except OSError as exc:
        raise _os_error(shown, exc) from None
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (target.info.st_dev, target.info.st_ino):
        os.close(fd)
        raise ResourceError("read_failed", f"{shown} changed while it was opened")
    return fd
