"""The ``native`` toolcall engine: the model's own function calling, unwrapped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ishiki_host.plugins.base import ToolcallEngine

__all__ = ["NativeToolcallEngine"]


class NativeToolcallEngine(ToolcallEngine):
    """Uses the model's native tool calling; it has no options."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        """Make the model wrapper for one runtime."""
        raise NotImplementedError("implemented by the runtime issue")
