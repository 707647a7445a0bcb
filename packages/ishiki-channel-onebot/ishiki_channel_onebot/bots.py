"""``OneBotBots``: the running accounts' ``OneBotAPI`` by QQ number, where the ``onebot://`` scheme finds them.

A connection registers its API while it runs (``register``); the ``onebot`` extension of each runtime reads
``onebot://<self_id>/...`` through the one registered for ``self_id``. They meet in the host's shared objects
under ``ONEBOT_BOTS`` (``ChannelHost.shared`` on the channel's side, ``RuntimeContext.services`` on the
extension's), so both find the same registry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ishiki_host import ServiceKey

if TYPE_CHECKING:
    from ishiki_channel_onebot.api import OneBotAPI

__all__ = ["ONEBOT_BOTS", "OneBotBots"]


class OneBotBots:
    """The APIs of the accounts running in this host, by ``self_id``."""

    def __init__(self) -> None:
        self._apis: dict[str, OneBotAPI] = {}

    def register(self, self_id: str, api: OneBotAPI) -> Callable[[], None]:
        """Serve ``self_id`` with ``api``; returns the function that takes it back."""
        self._apis[self_id] = api

        def deregister() -> None:
            if self._apis.get(self_id) is api:
                del self._apis[self_id]

        return deregister

    def get(self, self_id: str) -> OneBotAPI | None:
        """The API of ``self_id``, while its connection runs."""
        return self._apis.get(self_id)


ONEBOT_BOTS: ServiceKey[OneBotBots] = ServiceKey("ishiki-channel-onebot.bots", OneBotBots)
"""Where the registry is shared: ``shared.setdefault(ONEBOT_BOTS, OneBotBots)`` on both sides."""
