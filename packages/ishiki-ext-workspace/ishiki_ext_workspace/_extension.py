"""``WorkspaceExtension`` (entry point ``workspace`` of ``ishiki.ext``) and ``Workspace``, its per-runtime instance.

A profile enables it with ``extends: {workspace: {config: {...}}}`` (keys in ``_config.CONFIG_SCHEMA``). On
attach the instance registers the ``workspace://`` scheme in the runtime's resource center; every turn it
offers the file tools (and ``shell`` when enabled) and a prompt section naming the mounts, their modes and how
to address files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from ishiki_ext_workspace._config import CONFIG_SCHEMA, ROOT_MOUNT, Settings, settings_from_config
from ishiki_ext_workspace._paths import SCHEME
from ishiki_ext_workspace._render import plural
from ishiki_ext_workspace._scheme import WorkspaceScheme
from ishiki_ext_workspace._tools import PARAMETERS, WorkspaceTools
from ishiki_host import Extension, Tool, hookimpl

__all__ = ["Workspace", "WorkspaceExtension", "render_instructions"]


def _size(limit: int) -> str:
    if limit % (1024 * 1024) == 0:
        return f"{limit // (1024 * 1024)} MiB"
    return f"{limit // 1024} KiB" if limit % 1024 == 0 else plural(limit, "byte")


def render_instructions(settings: Settings) -> str:
    """The workspace's section of the system prompt."""
    lines = [
        "## Workspace files",
        "You have a file workspace: list_files, read_file, write_file, edit_file, search_files, delete_file.",
        "- Plain relative paths (e.g. notes/todo.md) are in the workspace root, which is read-write.",
    ]
    others = [m for m in settings.mounts if m.name != ROOT_MOUNT]
    if others:
        lines.append(f"- Other mounts are addressed as {SCHEME}://<mount>/<path>:")
        lines += [f"  - {SCHEME}://{m.name}/ ({'read-write' if m.writable else 'read-only'})" for m in others]
    lines += [
        "- Absolute paths, '..' and links that lead outside a mount are refused.",
        "- edit_file replaces exact text (it must match once, or pass count); write_file replaces a whole file.",
        f"- Files over {_size(settings.max_file_bytes)} are not read; binary files are described, not shown. "
        f"The read tool accepts {SCHEME}:// URLs too.",
    ]
    if settings.shell:
        lines.append(
            f"- shell runs /bin/sh commands in the workspace root (limit {settings.timeout_seconds:g} s); "
            "processes it starts are killed when it ends."
        )
    return "\n".join(lines)


class Workspace:
    """One runtime's workspace: the scheme, the tools and the instructions."""

    def __init__(self, ctx: Any, settings: Settings):
        self.settings = settings
        self._tools = WorkspaceTools(settings, lambda: ctx.resources, ctx.clock).tools()
        self._instructions = render_instructions(settings)

    @hookimpl
    def ishiki_attach(self, runtime: Any) -> Callable[[], None]:
        """Serve ``workspace://`` in the runtime's resource center until the runtime stops."""
        handler = WorkspaceScheme(self.settings)
        deregister: Callable[[], None] = runtime.resources.register(SCHEME, handler, owner="workspace", trust="trusted")
        return deregister

    @hookimpl
    def ishiki_tools(self) -> Sequence[Tool]:
        """The file tools (``trusted``) and ``shell`` (``owner``) when enabled."""
        return self._tools

    @hookimpl
    def ishiki_instructions(self) -> str:
        """The mounts, their modes and how to address files."""
        return self._instructions

    @hookimpl
    def ishiki_status(self) -> Sequence[str]:
        """One line: the mounts and whether the shell is on."""
        mounts = ", ".join(f"{m.name} {m.mode}" for m in self.settings.mounts)
        return [f"workspace: {mounts}; shell {'on' if self.settings.shell else 'off'}"]


class WorkspaceExtension(Extension):
    """A confined file workspace: ``workspace://`` resources, file tools and an optional shell."""

    config_schema: ClassVar[Mapping[str, Any]] = CONFIG_SCHEMA
    tool_names: ClassVar[tuple[str, ...] | None] = tuple(PARAMETERS)  # for ``ishiki check``; shell only when on

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Workspace:
        """The workspace of one runtime; ``ProfileInvalid`` when a configured directory cannot be used."""
        settings = settings_from_config(config, home=ctx.home, config_dir=ctx.config_dir, data_dir=ctx.data_dir)
        return Workspace(ctx, settings)
