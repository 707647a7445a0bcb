"""The shaped inbound event: what a channel makes of platform input before routing (``IshikiEvent``).

Every channel speaks this one shape, so routing, context engines and tools never see a platform's own
objects. Channel ids carry their kind (``private:<id>`` or ``group:<id>``); ``sid`` is ``platform:selfId``,
the key the route table looks up. ``to_dict``/``from_dict`` give the JSON form stored as ``data.source`` of a
fact-log message entry; its keys are camelCase like the rest of the log's platform coordinates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from ishiki_host.addresses.ids import ChannelKind, channel_id, is_platform, parse_channel_id, parse_sid
from ishiki_host.errors import EventInvalid, ResourceError
from ishiki_host.jsontypes import Json
from ishiki_host.resources.urls import parse_resource_url

__all__ = [
    "Attachment",
    "ChannelKind",
    "EventKind",
    "IshikiEvent",
    "Quote",
    "User",
    "channel_id",
    "parse_channel_id",
    "parse_sid",
]

EventKind = Literal["message.created", "message.deleted"]
_EVENT_KINDS: tuple[str, ...] = get_args(EventKind)


def _require_text(owner: str, name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise EventInvalid(f"{owner}.{name} must be a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class User:
    """A message's sender as the platform names them."""

    id: str
    name: str | None = None

    def __post_init__(self) -> None:
        _require_text("User", "id", self.id)
        if self.name is not None and not isinstance(self.name, str):
            raise EventInvalid(f"User.name must be a string or None, got {self.name!r}")

    def to_dict(self) -> dict[str, Json]:
        """JSON form: ``{"id", "name"?}``."""
        return {"id": self.id, "name": self.name} if self.name is not None else {"id": self.id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Json]) -> User:
        """Inverse of ``to_dict``."""
        return cls(id=data["id"], name=data.get("name"))


@dataclass(frozen=True, slots=True)
class Attachment:
    """Inbound media captured as a resource: its URL (normally ``asset://``), media type, name and size."""

    url: str
    media_type: str = "application/octet-stream"
    name: str | None = None
    size: int | None = None

    def __post_init__(self) -> None:
        try:
            parse_resource_url(self.url)
        except ResourceError as exc:
            raise EventInvalid(f"Attachment.url: {exc}") from None
        _require_text("Attachment", "media_type", self.media_type)
        if self.size is not None and (not isinstance(self.size, int) or self.size < 0):
            raise EventInvalid(f"Attachment.size must be a non-negative int or None, got {self.size!r}")

    def to_dict(self) -> dict[str, Json]:
        """JSON form: ``{"url", "mediaType", "name"?, "size"?}``."""
        out: dict[str, Json] = {"url": self.url, "mediaType": self.media_type}
        if self.name is not None:
            out["name"] = self.name
        if self.size is not None:
            out["size"] = self.size
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Json]) -> Attachment:
        """Inverse of ``to_dict``."""
        return cls(
            url=data["url"],
            media_type=data.get("mediaType", "application/octet-stream"),
            name=data.get("name"),
            size=data.get("size"),
        )


@dataclass(frozen=True, slots=True)
class Quote:
    """The message an inbound message replies to. ``from_self``: the quoted message is the bot's own."""

    message_id: str
    text: str = ""
    user: User | None = None
    from_self: bool = False

    def __post_init__(self) -> None:
        _require_text("Quote", "message_id", self.message_id)
        if not isinstance(self.text, str):
            raise EventInvalid(f"Quote.text must be a string, got {self.text!r}")

    def to_dict(self) -> dict[str, Json]:
        """JSON form: ``{"messageId", "text", "user"?, "fromSelf"}``."""
        out: dict[str, Json] = {"messageId": self.message_id, "text": self.text, "fromSelf": self.from_self}
        if self.user is not None:
            out["user"] = self.user.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Json]) -> Quote:
        """Inverse of ``to_dict``."""
        user = data.get("user")
        return cls(
            message_id=data["messageId"],
            text=data.get("text", ""),
            user=User.from_dict(user) if user else None,
            from_self=bool(data.get("fromSelf", False)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class IshikiEvent:
    """One shaped inbound event. Built by channels; validated on construction (``EventInvalid``).

    ``user`` is required for ``message.created`` (a deletion may not say who deleted). ``is_direct`` follows
    from the channel kind, so it can never disagree with it. ``extra`` holds platform details a channel wants
    to keep (JSON values only); the host never interprets it.
    """

    kind: EventKind
    platform: str
    self_id: str
    channel_id: str
    message_id: str
    timestamp: float
    user: User | None = None
    content: str = ""
    quote: Quote | None = None
    mentions_self: bool = False
    attachments: tuple[Attachment, ...] = ()
    extra: Mapping[str, Json] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in _EVENT_KINDS:
            raise EventInvalid(f"IshikiEvent.kind {self.kind!r} is not one of {', '.join(_EVENT_KINDS)}")
        if not isinstance(self.platform, str) or not is_platform(self.platform):
            raise EventInvalid(f"IshikiEvent.platform {self.platform!r} must be a name without ':', '/' or spaces")
        _require_text("IshikiEvent", "self_id", self.self_id)
        parse_channel_id(self.channel_id)
        _require_text("IshikiEvent", "message_id", self.message_id)
        if isinstance(self.timestamp, bool) or not isinstance(self.timestamp, int | float):
            raise EventInvalid(f"IshikiEvent.timestamp must be seconds since the epoch, got {self.timestamp!r}")
        if not math.isfinite(self.timestamp):
            raise EventInvalid(f"IshikiEvent.timestamp must be finite, got {self.timestamp!r}")
        if self.kind == "message.created" and self.user is None:
            raise EventInvalid("IshikiEvent.user is required for message.created")
        if not isinstance(self.content, str):
            raise EventInvalid(f"IshikiEvent.content must be a string, got {type(self.content).__name__}")

    @property
    def sid(self) -> str:
        """``platform:selfId``: which bot account received the event."""
        return f"{self.platform}:{self.self_id}"

    @property
    def channel_kind(self) -> ChannelKind:
        """``private`` or ``group``."""
        return parse_channel_id(self.channel_id)[0]

    @property
    def is_direct(self) -> bool:
        """A private (one-to-one) chat."""
        return self.channel_kind == "private"

    def to_dict(self) -> dict[str, Json]:
        """The JSON form stored as ``data.source`` of a fact-log message entry."""
        out: dict[str, Json] = {
            "kind": self.kind,
            "platform": self.platform,
            "selfId": self.self_id,
            "channelId": self.channel_id,
            "isDirect": self.is_direct,
            "messageId": self.message_id,
            "timestamp": self.timestamp,
            "content": self.content,
            "mentionsSelf": self.mentions_self,
        }
        if self.user is not None:
            out["user"] = self.user.to_dict()
        if self.quote is not None:
            out["quote"] = self.quote.to_dict()
        if self.attachments:
            out["attachments"] = [a.to_dict() for a in self.attachments]
        if self.extra:
            out["extra"] = dict(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Json]) -> IshikiEvent:
        """Inverse of ``to_dict``; ``EventInvalid`` names what is missing or wrong."""
        try:
            user, quote = data.get("user"), data.get("quote")
            attachments: Sequence[Mapping[str, Json]] = data.get("attachments") or ()
            return cls(
                kind=data["kind"],
                platform=data["platform"],
                self_id=data["selfId"],
                channel_id=data["channelId"],
                message_id=data["messageId"],
                timestamp=data["timestamp"],
                user=User.from_dict(user) if user else None,
                content=data.get("content", ""),
                quote=Quote.from_dict(quote) if quote else None,
                mentions_self=bool(data.get("mentionsSelf", False)),
                attachments=tuple(Attachment.from_dict(a) for a in attachments),
                extra=dict(data.get("extra") or {}),
            )
        except KeyError as exc:
            raise EventInvalid(f"stored event lacks the key {exc.args[0]!r}") from None
        except (TypeError, AttributeError, ValueError) as exc:  # ValueError: dict() of a string ("extra": "0")
            raise EventInvalid(f"stored event is malformed: {exc}") from None
