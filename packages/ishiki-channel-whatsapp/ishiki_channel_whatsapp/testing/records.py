"""What the fake Graph API records and what it can be told to fail with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Call", "Fault", "MediaFile", "ReadReceipt", "SentMessage"]


@dataclass(frozen=True, slots=True)
class Call:
    """One request: the call's name (``phone``, ``messages``, ``read``, ``upload``, ``media``, ``download``),
    method, path and the status answered (``None``: the connection was dropped)."""

    name: str
    method: str
    path: str
    status: int | None


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the fake accepted: its wamid, recipient, type, text (for ``text``), the message it replies
    to, the media id (for ``image``/``document``), and the whole request body."""

    id: str
    to: str
    type: str
    text: str | None = None
    reply_to: str | None = None
    media_id: str | None = None
    caption: str | None = None
    body: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReadReceipt:
    """A mark-as-read of ``message_id``; ``typing``: with the typing indicator."""

    message_id: str
    typing: bool


@dataclass(frozen=True, slots=True)
class MediaFile:
    """Media held by the fake (uploaded by the channel, or added by the test as inbound media)."""

    id: str
    data: bytes
    mime_type: str
    filename: str | None = None


@dataclass(frozen=True, slots=True)
class Fault:
    """One failure to answer a call with: a Graph API error ``code`` with its HTTP ``status`` and words, or
    ``cut`` (the connection is dropped without an answer)."""

    code: int | None = None
    status: int = 400
    message: str = ""
    cut: bool = False

    @classmethod
    def window_closed(cls) -> Fault:
        """131047: more than 24 hours since the person last wrote."""
        return cls(131047, 400, "Re-engagement message")

    @classmethod
    def rate_limited(cls) -> Fault:
        """130429: the number's throughput was reached."""
        return cls(130429, 400, "Rate limit hit")

    @classmethod
    def pair_rate_limited(cls) -> Fault:
        """131056: too many messages to the same person."""
        return cls(131056, 400, "(Business Account, Consumer Account) pair rate limit hit")

    @classmethod
    def token_expired(cls) -> Fault:
        """190: the access token expired."""
        return cls(190, 401, "Error validating access token: Session has expired.")

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        """A 5xx without a Graph API code."""
        return cls(None, status, "Internal server error")

    @classmethod
    def cut_connection(cls) -> Fault:
        """No answer: the connection is dropped."""
        return cls(cut=True)
