"""The entry point of group ``ishiki.channel`` named ``onebot``: ``OneBotChannel``.

The host reads ``config_schema`` (one entry of ``channels.onebot.accounts`` in ``ishiki.yaml``) without running
any plugin code, instantiates the class once, and calls ``create(ctx, account)`` once per configured account;
each call returns a ``OneBotConnection``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host import Channel

from ishiki_channel_onebot.config import ACCOUNT_SCHEMA, OneBotAccount
from ishiki_channel_onebot.connection import OneBotConnection

if TYPE_CHECKING:
    from ishiki_host import ChannelHost

__all__ = ["OneBotChannel"]


class OneBotChannel(Channel):
    """QQ (and any OneBot v11 implementation) as an Ishiki channel: forward or reverse WebSocket, or HTTP."""

    config_schema: ClassVar[Mapping[str, Any]] = ACCOUNT_SCHEMA

    def create(self, ctx: ChannelHost, account: Mapping[str, Any]) -> OneBotConnection:
        """The connection of one account (``HostConfigInvalid`` when the entry is invalid); back-off jitter
        is drawn from ``ctx.rng`` (seeded runs replay exactly)."""
        return OneBotConnection(ctx, OneBotAccount.from_config(account), rng=ctx.rng)

    def exclusive(self, account: Mapping[str, Any]) -> bool:
        """In a fleet of hosts: events posted over HTTP may reach any host behind the load balancer; a
        forward WebSocket is one host's at a time (the implementation sends each event once, on one socket),
        as is a reverse one (the implementation connects to one address)."""
        return bool(account.get("mode", "forward") != "http")
