"""The workspace's tools: their JSON Schemas, descriptions and handlers.

File tools need trust ``trusted``; ``shell`` needs ``owner``. Every failure is an error result naming the
path and what is wrong (the ``data`` holds ``{"error": code}``), never an exception into the turn. Blocking
work runs in worker threads.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ishiki_ext_workspace._edit import edit_file
from ishiki_ext_workspace._fileops import delete_path, list_entries, write_bytes
from ishiki_ext_workspace._paths import Location, locate
from ishiki_ext_workspace._render import plural, render_listing, render_search, render_shell
from ishiki_ext_workspace._search import compile_pattern, search
from ishiki_ext_workspace._shell import minimal_env, run_shell
from ishiki_ext_workspace._tree import MAX_DEPTH
from ishiki_host import Tool, ToolResult, render_read_result
from ishiki_host.errors import ResourceError

if TYPE_CHECKING:
    from ishiki_ext_workspace._config import Settings
    from ishiki_host import Clock, ResourceCenter, ToolContext, ToolHandler, TrustLevel

__all__ = ["PARAMETERS", "WorkspaceTools"]

T = TypeVar("T")

_PATH = "A path relative to the workspace root (e.g. notes/todo.md), or workspace://<mount>/<path> for another mount."


def _object(properties: Mapping[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties), "required": list(required), "additionalProperties": False}


PARAMETERS: Mapping[str, Mapping[str, Any]] = {
    "list_files": _object(
        {
            "path": {"type": "string", "description": _PATH + " Default '.'; workspace:// lists the mounts."},
            "glob": {"type": "string", "description": "Only entries matching: *.py (names at any depth), src/**/*.md."},
            "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "Levels to list."},
        }
    ),
    "read_file": _object(
        {
            "path": {"type": "string", "description": _PATH},
            "lines": {"type": "string", "description": "Lines to read: '10-20', '42', '100-' (to the end), '-50'."},
        },
        "path",
    ),
    "write_file": _object(
        {"path": {"type": "string", "description": _PATH}, "content": {"type": "string", "description": "All text."}},
        "path",
        "content",
    ),
    "edit_file": _object(
        {
            "path": {"type": "string", "description": _PATH},
            "old": {"type": "string", "description": "The exact text to replace (whitespace counts)."},
            "new": {"type": "string", "description": "The text to put in its place."},
            "count": {
                "type": "integer",
                "minimum": 1,
                "description": "Replace every occurrence; must equal their number.",
            },
        },
        "path",
        "old",
        "new",
    ),
    "search_files": _object(
        {
            "pattern": {"type": "string", "description": "A regular expression (Python syntax; (?i) ignores case)."},
            "path": {"type": "string", "description": "Where to search, a directory or a file. Default '.'."},
            "glob": {"type": "string", "description": "Only files matching: *.py, src/**/*.md."},
        },
        "pattern",
    ),
    "delete_file": _object({"path": {"type": "string", "description": _PATH}}, "path"),
    "shell": _object({"command": {"type": "string", "description": "A /bin/sh command line."}}, "command"),
}
"""The argument schema of each tool."""

DESCRIPTIONS: Mapping[str, str] = {
    "list_files": "List a workspace directory: directories end with /, symlinks with @, files show their size. "
    "depth sets how many levels (default 1); with a glob the listing is recursive unless depth is given.",
    "read_file": "Read a text file of the workspace (one page of up to 2,000 lines; lines selects). Binary files "
    "are described with their size and type, not shown.",
    "write_file": "Create or replace a whole file with content (directories are created). Atomic: readers see "
    "the old file or the new one, never half. Read-write mounts only.",
    "edit_file": "Replace exact text in a file. old must occur exactly once, or exactly count times with count; "
    "otherwise nothing changes and the result says how many occurrences there are and where.",
    "search_files": "Search text files for a regular expression; returns path:line: text for each matching line, "
    "capped. Binary and very large files are skipped.",
    "delete_file": "Delete a file, a symlink (not its target) or an empty directory. Read-write mounts only.",
    "shell": "Run a shell command with the workspace root as working directory; returns its exit code and "
    "output (stdout and stderr). Time-limited; background processes are killed when it ends.",
}


_TRUST: Mapping[str, TrustLevel] = {"shell": "owner"}


def _failed(name: str, exc: ResourceError) -> ToolResult:
    return ToolResult(content=f"{name} failed: {exc}", is_error=True, data={"error": exc.code})


def _tool_handler(name: str, fn: Callable[[Mapping[str, Any]], Awaitable[ToolResult]]) -> ToolHandler:
    async def handler(args: Mapping[str, Any], context: ToolContext) -> ToolResult:
        try:
            return await fn(args)
        except ResourceError as exc:
            return _failed(name, exc)

    return handler


async def _blocking(location: Location, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(location, *args, **kwargs)`` in a worker thread; an unexpected OS error names the path."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, location, *args, **kwargs))
    except OSError as exc:
        raise ResourceError("io_error", f"{location.shown}: {exc.strerror or exc}") from None


class WorkspaceTools:
    """The tools of one runtime's workspace."""

    def __init__(self, settings: Settings, resources: Callable[[], ResourceCenter], clock: Clock):
        self.settings = settings
        self._resources = resources
        self._clock = clock

    def tools(self) -> list[Tool]:
        """The file tools, and ``shell`` when enabled."""
        handlers: dict[str, Callable[[Mapping[str, Any]], Awaitable[ToolResult]]] = {
            "list_files": self.list_files,
            "read_file": self.read_file,
            "write_file": self.write_file,
            "edit_file": self.edit_file,
            "search_files": self.search_files,
            "delete_file": self.delete_file,
        }
        if self.settings.shell:
            handlers["shell"] = self.shell
        return [
            Tool(name, DESCRIPTIONS[name], _tool_handler(name, fn), PARAMETERS[name], _TRUST.get(name, "trusted"))
            for name, fn in handlers.items()
        ]

    def _locate(self, path: Any) -> Location:
        location = locate(path if path is not None else ".", self.settings)
        assert location is not None
        return location

    def _writable(self, path: Any) -> Location:
        location = self._locate(path)
        if not location.mount.writable:
            why = f"mount {location.mount.name!r} is read-only; write in the workspace root"
            raise ResourceError("read_only", f"{location.shown}: {why}")
        return location

    async def list_files(self, args: Mapping[str, Any]) -> ToolResult:
        """list_files(path?, glob?, depth?)."""
        location = locate(args.get("path", "."), self.settings, allow_all=True)
        if location is None:
            return ToolResult(content=(await self._resources().read("workspace://")).text or "")
        glob = args.get("glob") or None
        depth = args.get("depth") or (MAX_DEPTH if glob else 1)
        limit = self.settings.max_results
        listing = await _blocking(location, list_entries, depth=depth, glob=glob, limit=limit)
        text, data = render_listing(location, listing, self.settings.max_output_bytes, limit)
        return ToolResult(content=text, data=data)

    async def read_file(self, args: Mapping[str, Any]) -> ToolResult:
        """read_file(path, lines?): the resource center's page of the file's workspace:// URL."""
        location = self._locate(args["path"])
        result = await self._resources().read(location.url, lines=args.get("lines") or None)
        return ToolResult(content=render_read_result(result), data=result.to_dict())

    async def write_file(self, args: Mapping[str, Any]) -> ToolResult:
        """write_file(path, content)."""
        location = self._writable(args["path"])
        content = str(args["content"]).encode("utf-8")
        if len(content) > self.settings.max_file_bytes:
            limit = self.settings.max_file_bytes
            raise ResourceError("too_large", f"content is {len(content):,} bytes; files over {limit:,} are not written")
        outcome = await _blocking(location, write_bytes, content)
        what = "new file" if outcome.previous is None else f"replaced {plural(outcome.previous, 'byte')}"
        text = f"wrote {location.shown}: {plural(outcome.size, 'byte')} ({what})"
        data = {"path": location.shown, "size": outcome.size, "created": outcome.previous is None}
        return ToolResult(content=text, data=data)

    async def edit_file(self, args: Mapping[str, Any]) -> ToolResult:
        """edit_file(path, old, new, count?)."""
        location = self._writable(args["path"])
        count = args.get("count")
        outcome = await _blocking(
            location, edit_file, str(args["old"]), str(args["new"]), count, self.settings.max_file_bytes
        )
        where = ", ".join(str(n) for n in outcome.lines[:10]) + (" …" if len(outcome.lines) > 10 else "")
        lines = f"line{'s' if len(outcome.lines) > 1 else ''} {where}"
        text = f"edited {location.shown}: {plural(outcome.replacements, 'replacement')} ({lines})"
        return ToolResult(content=text, data={"path": location.shown, "replacements": outcome.replacements})

    async def search_files(self, args: Mapping[str, Any]) -> ToolResult:
        """search_files(pattern, path?, glob?)."""
        location = self._locate(args.get("path"))
        pattern = str(args["pattern"])
        compiled = compile_pattern(pattern)
        settings = self.settings
        outcome = await _blocking(
            location,
            search,
            compiled,
            glob=args.get("glob") or None,
            limit=settings.max_results,
            max_file_bytes=settings.max_file_bytes,
            timeout=settings.timeout_seconds,
        )
        text, data = render_search(location, pattern, outcome, settings.max_output_bytes, settings.max_results)
        return ToolResult(content=text, data=data)

    async def delete_file(self, args: Mapping[str, Any]) -> ToolResult:
        """delete_file(path)."""
        location = self._writable(args["path"])
        kind = await _blocking(location, delete_path)
        return ToolResult(content=f"deleted {kind} {location.shown}", data={"path": location.shown, "kind": kind})

    async def shell(self, args: Mapping[str, Any]) -> ToolResult:
        """shell(command)."""
        settings = self.settings
        try:
            outcome = await run_shell(
                str(args["command"]),
                cwd=settings.root.real,
                env=minimal_env(settings.root.real, settings.shell_env),
                timeout=settings.timeout_seconds,
                max_output=settings.max_output_bytes,
                clock=self._clock,
            )
        except OSError as exc:
            raise ResourceError("io_error", f"the command could not be started: {exc.strerror or exc}") from None
        text, data = render_shell(outcome, settings.timeout_seconds)
        return ToolResult(content=text, data=data, is_error=outcome.timed_out)
