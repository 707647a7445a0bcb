"""The ``native`` toolcall engine: the model's own function calling, unwrapped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host.engines._options import resolve_options
from ishiki_host.plugins.base import ToolcallEngine

if TYPE_CHECKING:
    from ishiki_host.core.hooks import AgentHooks
    from ishiki_host.core.model import LanguageModel

__all__ = ["NativeToolcall", "NativeToolcallEngine"]


class NativeToolcallEngine(ToolcallEngine):
    """Uses the model's native tool calling; it has no options."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> NativeToolcall:
        """Make the model wrapper for one runtime."""
        resolve_options(self.config_schema, config, where="toolcall.native")
        return NativeToolcall()


class NativeToolcall:
    """Passes the model through: tools go to the provider as function definitions, calls come back natively."""

    def wrap(self, model: LanguageModel) -> LanguageModel:
        """``model`` itself (the profile's shared model is never wrapped or changed)."""
        return model

    def hooks(self) -> AgentHooks | None:
        """None: native tool calling needs no history rendering."""
        return None

    async def instructions(self) -> str | None:
        """None: the tools' own descriptions are all the model needs."""
        return None
