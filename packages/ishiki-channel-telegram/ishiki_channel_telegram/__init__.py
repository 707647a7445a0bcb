"""Telegram channel for Ishiki Host: the Bot API over httpx, registered as ``telegram`` in ``ishiki.channel``.

``TelegramChannel`` is the entry-point class; ``create(host, account)`` gives a ``TelegramConnection`` per
account (a ``DraftingTelegramConnection``, which also shows replies as they are written, unless ``drafts: off``).
Test utilities (a loopback fake Bot API server and pytest fixtures) are in ``ishiki_channel_telegram.testing``.
"""

from ishiki_channel_telegram.api import BotAPI
from ishiki_channel_telegram.channel import TelegramChannel
from ishiki_channel_telegram.config import ACCOUNT_SCHEMA, TelegramAccount
from ishiki_channel_telegram.connection import DraftingTelegramConnection, TelegramConnection
from ishiki_channel_telegram.entities import BotIdentity
from ishiki_channel_telegram.errors import (
    TelegramAuthError,
    TelegramBadRequest,
    TelegramConflict,
    TelegramError,
    TelegramForbidden,
    TelegramRateLimited,
    TelegramUnavailable,
)
from ishiki_channel_telegram.render import RenderedPart, render_html, render_parts

__all__ = [
    "ACCOUNT_SCHEMA",
    "BotAPI",
    "BotIdentity",
    "DraftingTelegramConnection",
    "RenderedPart",
    "TelegramAccount",
    "TelegramAuthError",
    "TelegramBadRequest",
    "TelegramChannel",
    "TelegramConflict",
    "TelegramConnection",
    "TelegramError",
    "TelegramForbidden",
    "TelegramRateLimited",
    "TelegramUnavailable",
    "render_html",
    "render_parts",
]
