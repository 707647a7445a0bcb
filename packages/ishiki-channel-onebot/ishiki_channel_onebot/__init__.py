"""OneBot v11 channel for Ishiki Host (QQ through NapCat, Lagrange.OneBot, LLOneBot), registered as ``onebot`` in
``ishiki.channel``, and the ``onebot://`` scheme, registered as ``onebot`` in ``ishiki.ext``.

``OneBotChannel`` is the entry-point class; ``create(host, account)`` gives a ``OneBotConnection`` per account.
``segments`` reads and builds message segments; ``render_messages`` is the outbound rendering. Test utilities
(a loopback fake OneBot implementation and pytest fixtures) are in ``ishiki_channel_onebot.testing``.
"""

from ishiki_channel_onebot.api import OneBotAPI
from ishiki_channel_onebot.bots import ONEBOT_BOTS, OneBotBots
from ishiki_channel_onebot.channel import OneBotChannel
from ishiki_channel_onebot.config import ACCOUNT_SCHEMA, OneBotAccount
from ishiki_channel_onebot.connection import OneBotConnection
from ishiki_channel_onebot.errors import (
    OneBotActionFailed,
    OneBotAuthError,
    OneBotError,
    OneBotTimeout,
    OneBotUnavailable,
)
from ishiki_channel_onebot.extension import OneBotExtension
from ishiki_channel_onebot.render import render_messages, render_plain
from ishiki_channel_onebot.segments import Segment, parse_message

__all__ = [
    "ACCOUNT_SCHEMA",
    "ONEBOT_BOTS",
    "OneBotAPI",
    "OneBotAccount",
    "OneBotActionFailed",
    "OneBotAuthError",
    "OneBotBots",
    "OneBotChannel",
    "OneBotConnection",
    "OneBotError",
    "OneBotExtension",
    "OneBotTimeout",
    "OneBotUnavailable",
    "Segment",
    "parse_message",
    "render_messages",
    "render_plain",
]
