"""Test utilities for the OneBot channel, and for anyone testing against a OneBot v11 implementation.

``FakeOneBot`` is a loopback fake implementation over real WebSockets and HTTP (forward and reverse
WebSocket, the HTTP API and HTTP posts, error injection); ``builders`` makes event frames; the segment
builders (``text``, ``at``, ``reply``, ``image``, ``face``, ``record``) are the package's own; ``running``
runs a connection for the length of a block. The pytest fixtures (``onebot``, ``onebot_host``,
``onebot_account``, ``onebot_connection``) are registered by this package's ``pytest11`` entry point.
"""

from ishiki_host.testing import running_connection as running

from ishiki_channel_onebot.segments import Segment, at, face, image, record, reply, text
from ishiki_channel_onebot.testing.builders import (
    group_message,
    group_recall,
    heartbeat,
    lifecycle,
    next_message_id,
    private_message,
    private_recall,
)
from ishiki_channel_onebot.testing.fake import DEFAULT_ACCESS_TOKEN, DEFAULT_SELF_ID, Call, FakeOneBot, SentMessage

__all__ = [
    "DEFAULT_ACCESS_TOKEN",
    "DEFAULT_SELF_ID",
    "Call",
    "FakeOneBot",
    "Segment",
    "SentMessage",
    "at",
    "face",
    "group_message",
    "group_recall",
    "heartbeat",
    "image",
    "lifecycle",
    "next_message_id",
    "private_message",
    "private_recall",
    "record",
    "reply",
    "running",
    "text",
]
