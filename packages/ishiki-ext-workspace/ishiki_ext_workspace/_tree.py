"""Walking a directory tree inside a mount (for list_files and search_files), and glob patterns.

The walk goes depth first in name order, opening each directory relative to its parent's descriptor with
``O_NOFOLLOW``: symlinks are reported, never entered, so a walk cannot leave the mount or loop. It does not
descend into version-control directories (``.git``, ``.hg``, ``.svn``), though it lists them, and it never
shows the workspace's own temporary files.

Globs: ``*`` and ``?`` stay within one name, ``**`` spans directories, ``[abc]`` is a class and ``{a,b}``
an alternative. A glob without ``/`` matches the name at any depth (``*.py``); one with ``/`` matches the path
relative to where the walk started (``src/**/*.py``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ishiki_ext_workspace._confine import DIR_FLAGS
from ishiki_host.errors import ResourceError

__all__ = ["MAX_DEPTH", "TEMP_PREFIX", "VCS_DIRS", "Node", "glob_matcher", "walk_tree"]

MAX_DEPTH = 64
TEMP_PREFIX = ".ishiki-tmp-"
VCS_DIRS = frozenset({".git", ".hg", ".svn"})


@dataclass(frozen=True, slots=True)
class Node:
    """One entry met by a walk: the open directory holding it, the entry, and its path from the start."""

    dir_fd: int
    entry: os.DirEntry[str]
    rel: tuple[str, ...]

    @property
    def kind(self) -> str:
        """``dir``, ``file``, ``symlink`` or ``other`` (the entry itself, links not followed)."""
        if self.entry.is_symlink():
            return "symlink"
        if self.entry.is_dir(follow_symlinks=False):
            return "dir"
        return "file" if self.entry.is_file(follow_symlinks=False) else "other"


def _entries(fd: int) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(fd) as scan:
            return sorted((e for e in scan if not e.name.startswith(TEMP_PREFIX)), key=lambda e: e.name)
    except OSError:
        return []  # unreadable directory: nothing to show, not a failure of the whole walk


def walk_tree(fd: int, depth: int, prefix: tuple[str, ...] = ()) -> Iterator[Node]:
    """Every entry under the directory ``fd`` down to ``depth`` levels (1: its children only)."""
    for entry in _entries(fd):
        node = Node(fd, entry, (*prefix, entry.name))
        yield node
        if depth <= 1 or entry.name in VCS_DIRS or node.kind != "dir":
            continue
        try:
            sub = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
        except OSError:
            continue  # gone or unreadable meanwhile
        try:
            yield from walk_tree(sub, depth - 1, node.rel)
        finally:
            os.close(sub)


def _translate(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        i += 1
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and "]" in glob[i + 1 :]:
            end = glob.index("]", i + 1)
            body = glob[i:end].replace("\\", "\\\\")
            if body.startswith("!"):
                body = "^" + body[1:]
            elif body.startswith("^"):
                body = "\\" + body  # a literal caret, as in fnmatch
            out.append("[" + body + "]")
            i = end + 1
        elif ch == "{" and "}" in glob[i:]:
            end = glob.index("}", i)
            out.append("(?:" + "|".join(_translate(part) for part in glob[i:end].split(",")) + ")")
            i = end + 1
        else:
            out.append(re.escape(ch))
    return "".join(out)


def glob_matcher(glob: str | None) -> Callable[[tuple[str, ...]], bool]:
    """A test of a path (segments from the walk's start) against ``glob``; ``None`` matches everything."""
    if glob is None or glob == "":
        return lambda rel: True
    if "\x00" in glob or glob.startswith("/"):
        raise ResourceError("invalid_selector", f"glob {glob!r}: a glob is relative, e.g. *.py or src/**/*.md")
    pattern = _translate(glob if "/" in glob else "**/" + glob)
    try:
        compiled = re.compile(pattern, re.DOTALL)
    except re.error as exc:
        raise ResourceError("invalid_selector", f"glob {glob!r}: {exc}") from None
    return lambda rel: compiled.fullmatch("/".join(rel)) is not None
