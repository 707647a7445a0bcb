"""Test utilities for the Telegram channel, and for anyone testing against the Bot API.

``FakeBotAPI`` is a loopback fake of the Bot API over real HTTP; ``RecordingHost`` is a ``ChannelHost`` that
records what a channel dispatches; ``running`` runs a connection for the length of a block; ``builders`` makes
users, chats and UTF-16-correct entities. The pytest fixtures (``telegram_server``, ``telegram_host``,
``telegram_connection``, and for webhook mode ``telegram_ingress`` and ``telegram_webhook_host``) are
registered by this package's ``pytest11`` entry point.
"""

from ishiki_host.testing import running_connection as running

from ishiki_channel_telegram.testing._drafting import DraftFrame
from ishiki_channel_telegram.testing.botapi import DEFAULT_TOKEN, FakeBotAPI
from ishiki_channel_telegram.testing.builders import (
    Call,
    FakeFile,
    Fault,
    SentMessage,
    WebhookDelivery,
    entity,
    group_chat,
    private_chat,
    user,
)
from ishiki_channel_telegram.testing.host import HOOK_PREFIX, PUBLIC_URL, RecordingDelivery, RecordingHost, event_key

__all__ = [
    "DEFAULT_TOKEN",
    "HOOK_PREFIX",
    "PUBLIC_URL",
    "Call",
    "DraftFrame",
    "FakeBotAPI",
    "FakeFile",
    "Fault",
    "RecordingDelivery",
    "RecordingHost",
    "SentMessage",
    "WebhookDelivery",
    "entity",
    "event_key",
    "group_chat",
    "private_chat",
    "running",
    "user",
]
