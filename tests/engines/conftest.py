"""Fixtures of the engine tests: inbound platform messages as the runtime logs them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ishiki_host.channels.events import Attachment, IshikiEvent, Quote, User
from ishiki_host.core.messages import Message

Inbound = Callable[..., dict[str, Any]]


def inbound_message(
    text: str = "hello",
    *,
    channel: str = "group:g1",
    user: tuple[str, str | None] = ("u1", "Ana"),
    message_id: str = "m1",
    mentions: bool = False,
    quote: Quote | None = None,
    attachments: tuple[Attachment, ...] = (),
    timestamp: float = 1_700_000_000.0,
    platform: str = "telegram",
    self_id: str = "bot1",
    trust: str | None = "trusted",
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``data`` of a message entry for an inbound platform message (what ``runtime.deliver`` appends: the
    sender's level is stamped at ingest; ``trust=None`` leaves it out, as entries of older hosts)."""
    event = IshikiEvent(
        kind="message.created",
        platform=platform,
        self_id=self_id,
        channel_id=channel,
        message_id=message_id,
        timestamp=timestamp,
        user=User(user[0], user[1]),
        content=text,
        quote=quote,
        mentions_self=mentions,
        attachments=attachments,
        extra=extra or {},
    )
    data = {**Message.user(text).to_dict(), "source": event.to_dict()}
    if trust is not None:
        data["trust"] = trust
    return data


@pytest.fixture
def inbound() -> Inbound:
    """``inbound("hi", channel="private:7", mentions=True, ...)``: the data of an inbound message entry."""
    return inbound_message
