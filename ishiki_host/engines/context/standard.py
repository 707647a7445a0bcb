"""The ``standard`` context engine: whole turns, newest first, inside a token budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ishiki_host.plugins.base import ContextEngine

__all__ = ["StandardContextEngine"]


class StandardContextEngine(ContextEngine):
    """Keeps whole turns newest-first within ``budgetRatio`` of the model's context window.

    When the window is full it drops the oldest turns down to ``refillRatio`` of the budget (so it does not
    trim on every turn) and summarizes what it dropped in the background, appending a compact entry.
    """

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "budgetRatio": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 1,
                "default": 0.75,
                "description": "Share of the model's contextWindow the projected messages may use.",
            },
            "refillRatio": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0.5,
                "description": "When over budget, drop the oldest turns until this share of the budget is used.",
            },
        },
    }

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        """Make the engine instance for one runtime."""
        raise NotImplementedError("implemented by the runtime issue")
