"""Extensions: one with a config schema and hooks, one that asks to be on by default, three that declare tool names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ishiki_host import Extension, hookimpl


class GreeterInstance:
    """Adds a greeting to every turn's instructions."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = config

    @hookimpl
    def ishiki_instructions(self) -> str:
        return " ".join([self.config["greeting"]] * self.config["times"])


class Greeter(Extension):
    """An extension whose config needs a greeting."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["greeting"],
        "properties": {
            "greeting": {"type": "string", "minLength": 1},
            "times": {"type": "integer", "minimum": 1, "default": 1},
        },
    }

    def create(self, ctx: Any, config: Mapping[str, Any]) -> GreeterInstance:
        return GreeterInstance(config)


class Sticky(Extension):
    """Asks to be on for every profile; a third-party distribution must not get that."""

    default_enabled: ClassVar[bool] = True

    def create(self, ctx: Any, config: Mapping[str, Any]) -> object:
        return object()


class Notes(Extension):
    """Declares the tools it offers, so ``ishiki check`` can compare them with other extensions'."""

    tool_names: ClassVar[tuple[str, ...] | None] = ("note_add", "note_list")

    def create(self, ctx: Any, config: Mapping[str, Any]) -> object:
        return object()


class Jotter(Extension):
    """Declares a tool name ``Notes`` declares too."""

    tool_names: ClassVar[tuple[str, ...] | None] = ("jot", "note_add")

    def create(self, ctx: Any, config: Mapping[str, Any]) -> object:
        return object()


class Reader(Extension):
    """Declares a tool named like a kernel tool."""

    tool_names: ClassVar[tuple[str, ...] | None] = ("read",)

    def create(self, ctx: Any, config: Mapping[str, Any]) -> object:
        return object()
