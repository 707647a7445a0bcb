"""The entry point of group ``ishiki.channel`` named ``telegram``: ``TelegramChannel``.

The host reads the class attributes (``config_schema``: one entry of ``channels.telegram.accounts`` in
``ishiki.yaml``; ``api_version``) without running any plugin code, instantiates the class once, and calls
``create(ctx, account)`` once per configured account; each call returns a ``TelegramConnection``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host import Channel

from ishiki_channel_telegram.config import ACCOUNT_SCHEMA, TelegramAccount
from ishiki_channel_telegram.connection import TelegramConnection, make_connection
from ishiki_channel_telegram.diagnosis import diagnose

if TYPE_CHECKING:
    from pathlib import Path

    from ishiki_host import ChannelHost, Finding

__all__ = ["TelegramChannel"]


class TelegramChannel(Channel):
    """The Telegram Bot API as an Ishiki channel: long polling (or a webhook) in, ``sendMessage`` and friends out."""

    config_schema: ClassVar[Mapping[str, Any]] = ACCOUNT_SCHEMA

    def create(self, ctx: ChannelHost, account: Mapping[str, Any]) -> TelegramConnection:
        """The connection of one account (``HostConfigInvalid`` when the entry is invalid).

        Back-off jitter is drawn from ``ctx.rng`` (seeded runs replay exactly). Unless the account's ``drafts``
        is ``off``, the connection also shows replies as they are written (``DraftingTelegramConnection``).
        """
        return make_connection(ctx, TelegramAccount.from_config(account), rng=ctx.rng)

    def exclusive(self, account: Mapping[str, Any]) -> bool:
        """In a fleet of hosts: long polling is one host's at a time (a second ``getUpdates`` of the token is
        refused with 409 Conflict); a webhook's updates may reach any host behind the load balancer."""
        return bool(account.get("mode", "polling") != "webhook")

    async def diagnose(self, account: Mapping[str, Any], *, seconds: float, state_dir: Path) -> Sequence[Finding]:
        """For ``ishiki doctor``: ``getMe`` (the bot and the latency, or the refused token with its fix) and,
        in webhook mode, ``getWebhookInfo``; each call cut at ``seconds`` (``ishiki_channel_telegram.diagnosis``)."""
        return await diagnose(account, seconds=seconds)
