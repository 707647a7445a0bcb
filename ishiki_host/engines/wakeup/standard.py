"""The ``standard`` wakeup engine: answer direct messages, mentions, quotes and keywords."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ishiki_host.plugins.base import WakeupEngine

__all__ = ["StandardWakeupEngine"]


class StandardWakeupEngine(WakeupEngine):
    """Starts a turn for a direct message, a mention of the bot, a quote of the bot, or a keyword.

    Other group messages are recorded without a turn; the persona sees them at its next turn.
    """

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "keywords": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "default": [],
                "description": "Words that start a turn when a message contains them (case-insensitive).",
            },
            "direct": {"type": "boolean", "default": True, "description": "Answer every direct (private) message."},
            "mention": {"type": "boolean", "default": True, "description": "Answer messages that mention the bot."},
            "quote": {"type": "boolean", "default": True, "description": "Answer messages that quote the bot."},
        },
    }

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        """Make the engine instance for one runtime."""
        raise NotImplementedError("implemented by the runtime issue")
