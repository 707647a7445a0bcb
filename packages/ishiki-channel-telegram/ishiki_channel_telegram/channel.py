"""The entry point of group ``ishiki.channel`` named ``telegram``: ``TelegramChannel``.

The host reads the class attributes (``config_schema``: one entry of ``channels.telegram.accounts`` in
``ishiki.yaml``; ``api_version``) without running any plugin code, instantiates the class once, and calls
``create(ctx, account)`` once per configured account; each call returns a ``TelegramConnection``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host import Channel

from ishiki_channel_telegram.config import ACCOUNT_SCHEMA, TelegramAccount
from ishiki_channel_telegram.connection import TelegramConnection

if TYPE_CHECKING:
    from ishiki_host import ChannelHost

__all__ = ["TelegramChannel"]


class TelegramChannel(Channel):
    """The Telegram Bot API as an Ishiki channel: long polling (or a webhook) in, ``sendMessage`` and friends out."""

    config_schema: ClassVar[Mapping[str, Any]] = ACCOUNT_SCHEMA

    def create(self, ctx: ChannelHost, account: Mapping[str, Any]) -> TelegramConnection:
        """The connection of one account (``HostConfigInvalid`` when the entry is invalid).

        Back-off jitter is drawn from ``ctx.rng`` (seeded runs replay exactly).
        """
        return TelegramConnection(ctx, TelegramAccount.from_config(account), rng=ctx.rng)
