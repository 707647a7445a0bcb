"""The entry point of group ``ishiki.channel`` named ``whatsapp``: ``WhatsAppChannel``.

The host reads the class attributes (``config_schema``: one entry of ``channels.whatsapp.accounts`` in
``ishiki.yaml``; ``api_version``) without running any plugin code, instantiates the class once, and calls
``create(ctx, account)`` once per configured account. The account's ``backend`` picks the connection: a
``CloudConnection`` for ``cloud``, the linked device's connection for ``web``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host import Channel

from ishiki_channel_whatsapp.cloud.connection import CloudConnection
from ishiki_channel_whatsapp.config import ACCOUNT_SCHEMA, CloudAccount, check_account
from ishiki_channel_whatsapp.diagnosis import diagnose
from ishiki_channel_whatsapp.web.connection import create_web_connection

if TYPE_CHECKING:
    from pathlib import Path

    from ishiki_host import ChannelConnection, ChannelHost, Finding

__all__ = ["WhatsAppChannel"]


class WhatsAppChannel(Channel):
    """WhatsApp as an Ishiki channel: the Business Cloud API (``backend: cloud``) or a linked device (``web``)."""

    config_schema: ClassVar[Mapping[str, Any]] = ACCOUNT_SCHEMA

    def create(self, ctx: ChannelHost, account: Mapping[str, Any]) -> ChannelConnection:
        """The connection of one account (``HostConfigInvalid`` when the entry is invalid).

        Back-off jitter is drawn from ``ctx.rng`` (seeded runs replay exactly).
        """
        check_account(account)
        if account["backend"] == "cloud":
            return CloudConnection(ctx, CloudAccount.from_config(account), rng=ctx.rng)
        return create_web_connection(ctx, account)

    def exclusive(self, account: Mapping[str, Any]) -> bool:
        """In a fleet of hosts: a linked device (``web``) is one host's at a time (the session is one
        connection); the Cloud API's webhooks may reach any host behind the load balancer."""
        return bool(account.get("backend") != "cloud")

    async def diagnose(self, account: Mapping[str, Any], *, seconds: float, state_dir: Path) -> Sequence[Finding]:
        """For ``ishiki doctor``: ``cloud`` asks the Graph API for the number (cut at ``seconds``); ``web`` reads
        the linked device's session in ``state_dir`` (the account's state directory).
        See ``ishiki_channel_whatsapp.diagnosis``."""
        return await diagnose(account, seconds=seconds, state_dir=state_dir)
