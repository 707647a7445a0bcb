"""Building blocks for tests against the fake Bot API: users, chats, entities, faults, and the records the
fake keeps of what a bot did.

``entity(text, part, type)`` computes an entity's ``offset`` and ``length`` in UTF-16 code units, the way
Telegram does, so a test can put emoji before a mention and still describe it correctly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ishiki_host import utf16_len

__all__ = [
    "Call",
    "FakeFile",
    "Fault",
    "SentMessage",
    "WebhookDelivery",
    "entity",
    "group_chat",
    "private_chat",
    "user",
]


def user(user_id: int, first_name: str, *, username: str | None = None, last_name: str | None = None) -> dict[str, Any]:
    """A Telegram ``User`` (a person, not a bot)."""
    out: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
    if last_name:
        out["last_name"] = last_name
    if username:
        out["username"] = username
    return out


def private_chat(person: dict[str, Any]) -> dict[str, Any]:
    """The private chat with ``person`` (its id is the person's id)."""
    chat = {"id": person["id"], "type": "private"}
    chat.update({key: person[key] for key in ("first_name", "last_name", "username") if key in person})
    return chat


def group_chat(chat_id: int, title: str, *, kind: str = "supergroup") -> dict[str, Any]:
    """A ``group``, ``supergroup`` (the default) or ``channel`` chat."""
    return {"id": chat_id, "type": kind, "title": title}


def entity(text: str, part: str, kind: str, *, occurrence: int = 0, **fields: Any) -> dict[str, Any]:
    """The entity of type ``kind`` covering the ``occurrence``-th ``part`` of ``text`` (UTF-16 offsets)."""
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(part, start + 1)
    return {"type": kind, "offset": utf16_len(text[:start]), "length": utf16_len(part), **fields}


@dataclass(frozen=True, slots=True)
class Fault:
    """An answer the fake gives instead of the real one, once.

    ``drop``: close the connection without answering (a network cut); ``hang``: never answer (a server that
    hangs, until the fake stops). Otherwise an error envelope with ``status`` and ``description`` (and
    ``parameters.retry_after`` when given), Telegram's shape.
    """

    status: int = 500
    description: str = "Internal Server Error"
    retry_after: int | None = None
    drop: bool = False
    hang: bool = False

    @classmethod
    def rate_limited(cls, retry_after: int) -> Fault:
        """429 with Telegram's wording."""
        return cls(429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after)

    @classmethod
    def conflict(cls) -> Fault:
        """409 as another poller causes it."""
        return cls(
            409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
        )

    @classmethod
    def cut(cls) -> Fault:
        """The connection closes with no answer."""
        return cls(drop=True)

    @classmethod
    def hanging(cls) -> Fault:
        """The request is never answered."""
        return cls(hang=True)


@dataclass(frozen=True, slots=True)
class Call:
    """One Bot API request the fake received (``ok``: it was answered with success)."""

    method: str
    params: dict[str, Any]
    uploads: dict[str, str] = field(default_factory=dict)  # field -> file name
    ok: bool = True


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the bot sent: the text shown (after HTML parsing), its entities, and how it was asked for."""

    chat_id: int
    message_id: int
    text: str
    method: str = "sendMessage"
    parse_mode: str | None = None
    source: str = ""
    entities: tuple[dict[str, Any], ...] = ()
    reply_to: int | None = None
    file: bytes | None = None
    file_name: str | None = None


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """One webhook request the fake made: the update, the status the bot answered (``None``: no answer, the
    connection failed) and, when it was not 2xx, the error as ``getWebhookInfo`` reports it."""

    update_id: int
    status: int | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """The bot answered 2xx: the update is confirmed."""
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True, slots=True)
class FakeFile:
    """A file the fake can serve through ``getFile`` and the file URL; ``size`` may be declared larger than
    ``data`` to test limits without allocating them."""

    file_id: str
    file_unique_id: str
    data: bytes
    size: int
    path: str

    def as_document(self, file_name: str, mime_type: str) -> dict[str, Any]:
        """A ``Document`` object for this file."""
        return {**self._ids(), "file_name": file_name, "mime_type": mime_type}

    def as_photo_size(self, width: int, height: int) -> dict[str, Any]:
        """A ``PhotoSize`` object for this file."""
        return {**self._ids(), "width": width, "height": height}

    def _ids(self) -> dict[str, Any]:
        return {"file_id": self.file_id, "file_unique_id": self.file_unique_id, "file_size": self.size}
