"""How tools and URLs name a place in the workspace: a mount and the segments of a path inside it.

A tool's ``path`` is either a plain relative path in the root mount (``notes/todo.md``; taken literally, so
``%2e%2e`` is a file of that name), or a ``workspace://<mount>/<path>`` URL, parsed by the host's strict
resource-URL parser (where ``%2e%2e`` is ``..`` and refused). Plain paths refuse what could leave the mount or
mislead: absolute paths, ``..``, ``~``, backslashes, NUL and control characters. Empty and ``.`` segments are
dropped, so ``""`` and ``"."`` name the root. A path may be at most ``MAX_DEPTH`` (64) segments deep, as
deep as ``list_files`` and ``search_files`` go: a deeper one is refused before anything is opened, so one
``write_file`` cannot build a 2,000-level tree that no listing shows and every walk must crawl. What
resolving the segments may still meet (symlinks, hard links) is ``_confine``'s business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_ext_workspace._config import ROOT_MOUNT
from ishiki_ext_workspace._tree import MAX_DEPTH
from ishiki_host import ResourceURL, format_resource_url, parse_resource_url
from ishiki_host.errors import ResourceError

if TYPE_CHECKING:
    from ishiki_ext_workspace._config import Mount, Settings

__all__ = ["SCHEME", "Location", "locate", "locate_url"]

SCHEME = "workspace"
_PREFIX = f"{SCHEME}://"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _invalid(path: str, why: str) -> ResourceError:
    shown = path if len(path) <= 200 else path[:200] + "…"
    return ResourceError("invalid_resource_uri", f"{shown!r}: {why}")


@dataclass(frozen=True, slots=True)
class Location:
    """A mount and the segments of a path inside it (``()`` is the mount root)."""

    mount: Mount
    segments: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        """The ``workspace://`` URL of this place."""
        return format_resource_url(SCHEME, (self.mount.name, *self.segments))

    @property
    def shown(self) -> str:
        """How tools show it: a plain relative path in the root mount, else the URL."""
        if self.mount.name != ROOT_MOUNT:
            return self.url
        return "/".join(self.segments) or "."

    @property
    def parent(self) -> Location:
        """The directory holding this place (the mount root for itself)."""
        return Location(self.mount, self.segments[:-1])

    def child(self, *names: str) -> Location:
        """A place below this one."""
        return Location(self.mount, (*self.segments, *names))


def _mount(settings: Settings, name: str, raw: str) -> Mount:
    mount = settings.mount(name)
    if mount is None:
        names = ", ".join(m.name for m in settings.mounts)
        raise ResourceError("not_found", f"{raw}: no mount named {name!r}; mounts: {names}")
    return mount


def locate_url(url: ResourceURL, settings: Settings) -> Location | None:
    """The place a parsed ``workspace://`` URL names; ``None`` for ``workspace://`` (every mount)."""
    if not url.segments:
        return None
    raw = str(url.bare())
    return Location(_mount(settings, url.authority, raw), _capped(url.path_segments, raw))


def _capped(segments: tuple[str, ...], path: str) -> tuple[str, ...]:
    if len(segments) > MAX_DEPTH:
        raise _invalid(path, f"{len(segments)} levels deep; a path has at most {MAX_DEPTH} (as deep as listing goes)")
    return segments


def _plain(path: str) -> tuple[str, ...]:
    if _CONTROL.search(path):
        raise _invalid(path, "NUL and control characters are not allowed in a path")
    if path.startswith("/"):
        raise _invalid(path, "absolute paths are not allowed; paths are relative to the workspace root")
    if "\\" in path:
        raise _invalid(path, "use '/' between directories ('\\' is not allowed)")
    segments = tuple(part for part in path.split("/") if part not in ("", "."))
    if ".." in segments:
        raise _invalid(path, "'..' is not allowed: a path cannot leave its mount")
    if segments and segments[0] == "~":
        raise _invalid(path, "'~' is not expanded; paths are relative to the workspace root")
    return _capped(segments, path)


def locate(path: object, settings: Settings, *, allow_all: bool = False) -> Location | None:
    """The place a tool's ``path`` argument names (see the module docstring).

    ``workspace://`` alone (every mount) gives ``None`` when ``allow_all``, else an error.
    """
    if not isinstance(path, str):
        raise _invalid(repr(path), "a path must be a string")
    if path[: len(_PREFIX)].lower() != _PREFIX:
        return Location(settings.root, _plain(path))
    url = parse_resource_url(path)
    if url.query or url.fragment:
        raise _invalid(path, "a tool path takes no ?query or #fragment (read_file has a lines argument)")
    location = locate_url(url, settings)
    if location is None and not allow_all:
        raise _invalid(path, "names every mount, not a file; add a mount name, e.g. workspace://root/notes.txt")
    return location
