"""The built-in ``console`` channel: a chat on the terminal (``console:local``, channel ``private:local``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ishiki_host.plugins.base import Channel

__all__ = ["ConsoleChannel"]


class ConsoleChannel(Channel):
    """The local terminal as a channel; the local user is the owner. It takes no account options."""

    def create(self, ctx: Any, account: Mapping[str, Any]) -> Any:
        """Make the channel."""
        raise NotImplementedError("implemented by the runtime issue")
