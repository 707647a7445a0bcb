"""``ConsoleChannel``: the console's plugin class (entry point ``console``) and its account options."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, ClassVar

from ishiki_host.channels.base import Channel
from ishiki_host.channels.console.connection import ConsoleConnection, _is_tty
from ishiki_host.channels.console.drafting import DraftingConsole

__all__ = ["ConsoleChannel"]


class ConsoleChannel(Channel):
    """The local terminal as a channel; the local user is the owner (see the package docstring)."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "drain_seconds": {
                "type": "number",
                "minimum": 0,
                "default": 60,
                "description": "At the end of piped input, how long pending turns may run before the host stops.",
            },
            "settle_seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 600,
                "description": "How long one line's turn may run before the next line is read anyway.",
            },
            "history": {
                "type": "boolean",
                "default": True,
                "description": "Keep the interactive chat's input history between runs.",
            },
        },
    }

    def create(self, ctx: Any, account: Mapping[str, Any]) -> ConsoleConnection:
        """The console connection (stdin and stdout of the host process): on a terminal, one that also shows
        replies as they are written; on pipes, one that prints only the final messages."""
        interactive = _is_tty(sys.stdin) and _is_tty(sys.stdout)
        kind = DraftingConsole if interactive else ConsoleConnection
        return kind(
            ctx,
            interactive=interactive,
            drain_seconds=float(account.get("drain_seconds", 60)),
            settle_seconds=float(account.get("settle_seconds", 600)),
            history=bool(account.get("history", True)),
        )
