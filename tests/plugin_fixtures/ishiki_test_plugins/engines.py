"""Engines with options, and a pair where one requires the other (like the narrative engines)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ishiki_host import ContextEngine, ToolcallEngine


@dataclass(frozen=True)
class Made:
    """What ``create`` made: the service and the config it was given."""

    service: str
    ctx: Any
    config: Mapping[str, Any]


class WindowContext(ContextEngine):
    """A context engine with one option."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"window": {"type": "integer", "minimum": 1, "default": 8}},
    }

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Made:
        return Made("testctx", ctx, config)


class NarratedContext(ContextEngine):
    """A context engine that needs the ``testdecoder`` toolcall engine in the same profile."""

    requires: ClassVar[tuple[str, ...]] = ("ishiki.engine.toolcall.testdecoder",)

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Made:
        return Made("needsdecoder", ctx, config)


class DecoderToolcall(ToolcallEngine):
    """The toolcall half of the pair."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Made:
        return Made("testdecoder", ctx, config)
