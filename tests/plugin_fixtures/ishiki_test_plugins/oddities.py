"""Entry-point objects that break the plugin contract, each in one way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ishiki_host import ContextEngine, Extension


def not_a_class() -> None:
    """A function where a class is expected."""


class WrongBase(Extension):
    """An extension registered in the wakeup group."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> object:
        return object()


class FutureContext(ContextEngine):
    """Written for a plugin API this host does not speak."""

    api_version: ClassVar[str] = "2.0"

    def create(self, ctx: Any, config: Mapping[str, Any]) -> object:
        return object()


class BadSchema(Extension):
    """Its config schema is not a valid JSON Schema."""

    config_schema: ClassVar[Mapping[str, Any]] = {"type": "objekt"}

    def create(self, ctx: Any, config: Mapping[str, Any]) -> object:
        return object()


class BadToolNames(Extension):
    """Its ``tool_names`` is a string, not a tuple of names."""

    tool_names = "read"  # type: ignore[assignment]

    def create(self, ctx: Any, config: Mapping[str, Any]) -> object:
        return object()
