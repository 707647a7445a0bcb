"""``lifecycle``: an extension that appends what happens to it, one line each, to the file ``path``.

Lines: ``create <key>``, ``attach <key>``, ``tools <key>``, ``stop <key>``, ``dispose <key>``. Options make it
misbehave on purpose: ``raise_in_stop``, ``raise_in_tools`` (only for keys containing ``raise_in_tools_for``
when that is set), ``tool`` (offer a tool ``echo``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from ishiki_host import Extension, Tool, hookimpl


class LifecycleInstance:
    def __init__(self, key: str, config: Mapping[str, Any]) -> None:
        self.key = key
        self.config = config
        self.note("create")

    def note(self, what: str) -> None:
        with Path(self.config["path"]).open("a", encoding="utf-8") as out:
            out.write(f"{what} {self.key}\n")

    @hookimpl
    def ishiki_attach(self, runtime: Any) -> Any:
        self.note("attach")
        return lambda: self.note("dispose")

    @hookimpl
    def ishiki_tools(self, runtime: Any) -> list[Tool]:
        self.note("tools")
        if self.config["raise_in_tools"] and self.config["raise_in_tools_for"] in self.key:
            raise RuntimeError("lifecycle: raising in ishiki_tools, as configured")
        if not self.config["tool"]:
            return []

        async def echo(args: Mapping[str, Any], ctx: Any) -> str:
            return str(args.get("text", ""))

        return [Tool("echo", "Echo the text.", echo, {"type": "object", "properties": {"text": {"type": "string"}}})]

    @hookimpl
    async def ishiki_stop(self, runtime: Any) -> None:
        self.note("stop")
        if self.config["raise_in_stop"]:
            raise RuntimeError("lifecycle: raising in ishiki_stop, as configured")


class Lifecycle(Extension):
    """Records its life cycle in a file."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path"],
        "properties": {
            "path": {"type": "string"},
            "raise_in_stop": {"type": "boolean", "default": False},
            "raise_in_tools": {"type": "boolean", "default": False},
            "raise_in_tools_for": {"type": "string", "default": ""},
            "tool": {"type": "boolean", "default": False},
        },
    }

    def create(self, ctx: Any, config: Mapping[str, Any]) -> LifecycleInstance:
        return LifecycleInstance(str(ctx.key), config)
