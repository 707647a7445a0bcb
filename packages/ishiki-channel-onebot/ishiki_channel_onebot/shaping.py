"""OneBot v11 events shaped into ``IshikiEvent``s (plus the attachments to capture with them).

- ``message`` events: ``message_type`` ``private`` → ``private:<user_id>``, ``group`` → ``group:<group_id>``;
  the sender's name is their group card, else their nickname. The content is the text of the segments:
  ``text`` as it is, ``at`` as ``@<qq>`` (``@all`` for everyone), ``face`` as ``[face:<id>]``, ``forward`` as a
  line naming its ``onebot://`` resource, and a segment of any other type as ``[<type>: <data as JSON>]``,
  so nothing said is lost and nothing unknown crashes.
- The bot is addressed (``mentions_self``) by an ``at`` of its own id, or a ``reply`` to one of its messages
  (then ``quote.from_self`` too). A ``reply`` becomes the ``quote``; its text and sender come from the
  ``lookup`` the connection gives (its own sent messages, then ``get_msg``), and only its id when both fail.
- ``image``, ``record`` and ``file`` segments are attachments, captured lazily: the connection's fetcher gets
  them through ``get_image`` / ``get_record`` (or the URL a ``file`` segment carries) on first read.
- ``notice`` events ``group_recall`` and ``friend_recall`` become ``message.deleted`` of that message id.
- Frames are decoded JSON and trusted in nothing: a message event without its ids, or with a ``message`` of
  another shape, is malformed (``EventInvalid``), never a crash. Other post types are not events (``None``).
- ``extra``: ``messageType``, ``subType``, ``role`` (in groups), ``mentionRequired`` on every group event.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host import InboundAttachment, IshikiEvent, Quote, User, channel_id
from ishiki_host.errors import EventInvalid

from ishiki_channel_onebot.segments import Segment, parse_message

if TYPE_CHECKING:
    from ishiki_channel_onebot.config import OneBotAccount

__all__ = ["PLATFORM", "QuoteLookup", "Shaped", "Shaper", "event_key"]

PLATFORM = "onebot"
_QUOTE_CHARS = 1000

QuoteLookup = Callable[[str], Awaitable[Mapping[str, Any] | None]]
"""``lookup(message_id)``: what ``get_msg`` answers of a message (``message``, ``sender``), or ``None``."""


@dataclass(frozen=True, slots=True)
class Shaped:
    """One event to dispatch, the attachments the host captures for it, and the raw frame (set aside whole)."""

    event: IshikiEvent
    attachments: tuple[InboundAttachment, ...] = ()

    @property
    def key(self) -> str:
        """The event's identity for recognising it again (``event_key``)."""
        return event_key(self.event)


def event_key(event: IshikiEvent) -> str:
    """``<kind>/<channel>/<message id>``: what the channel remembers of an event it took."""
    return f"{event.kind}/{event.channel_id}/{event.message_id}"


def _require(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise EventInvalid(f"{what} is missing or malformed ({value!r:.80})")
    return value


class Shaper:
    """Shapes the events of one bot account (``self_id``); ``fetcher`` names its asset fetcher (the sid)."""

    def __init__(self, self_id: str, account: OneBotAccount, *, fetcher: str, lookup: QuoteLookup):
        self.self_id = self_id
        self.account = account
        self.fetcher = fetcher
        self.lookup = lookup

    async def shape(self, frame: Mapping[str, Any], now: float) -> Shaped | None:
        """The event of ``frame``, ``None`` when it is no message or recall; ``EventInvalid`` when malformed."""
        post_type = frame.get("post_type")
        if post_type == "message":
            return await self._message(frame, now)
        if post_type == "notice" and frame.get("notice_type") in ("group_recall", "friend_recall"):
            return self._recall(frame, now)
        return None

    async def _message(self, frame: Mapping[str, Any], now: float) -> Shaped:
        kind = _require(frame.get("message_type"), str, "message_type")
        message_id = _require(frame.get("message_id"), int, "message_id")
        user_id = _require(frame.get("user_id"), int, "user_id")
        if kind == "group":
            channel = channel_id("group", _require(frame.get("group_id"), int, "group_id"))
        elif kind == "private":
            channel = channel_id("private", user_id)
        else:
            raise EventInvalid(f"message_type {kind!r} is neither private nor group")
        segments = parse_message(frame.get("message"))
        content, mentioned, attachments, reply_to = self._read(segments)
        quote = await self._quote(reply_to) if reply_to is not None else None
        sender = _mapping(frame.get("sender"))
        extra: dict[str, Any] = {"messageType": kind, "subType": str(frame.get("sub_type") or "")}
        if kind == "group":
            extra["mentionRequired"] = self.account.requires_mention(channel)
            if isinstance(sender.get("role"), str):
                extra["role"] = sender["role"]
        event = IshikiEvent(
            kind="message.created",
            platform=PLATFORM,
            self_id=self.self_id,
            channel_id=channel,
            message_id=str(message_id),
            timestamp=_time(frame, now),
            user=User(id=str(user_id), name=_name(sender)),
            content=content,
            quote=quote,
            mentions_self=mentioned or bool(quote and quote.from_self),
            extra=extra,
        )
        return Shaped(event, tuple(attachments))

    def _read(self, segments: list[Segment]) -> tuple[str, bool, list[InboundAttachment], str | None]:
        """The content, whether the bot is @-mentioned, the attachments, and the message replied to."""
        parts: list[str] = []
        attachments: list[InboundAttachment] = []
        mentioned, reply_to = False, None
        for segment in segments:
            if segment.type == "reply" and reply_to is None and segment.get("id"):
                reply_to = segment.get("id")
            elif segment.type == "at":
                qq = segment.get("qq") or ""
                mentioned = mentioned or qq == self.self_id
                parts.append("@all" if qq == "all" else f"@{qq}")
            else:
                parts.append(self._piece(segment, attachments))
        return "".join(parts).strip(), mentioned, attachments, reply_to

    def _piece(self, segment: Segment, attachments: list[InboundAttachment]) -> str:
        """What one segment shows in the content (an attachment's segment shows nothing, or a note)."""
        kind = segment.type
        if kind == "text":
            return segment.get("text") or ""
        if kind == "face":
            return f"[face:{segment.get('id') or '?'}]"
        if kind in ("image", "record") and segment.get("file"):
            media = "image/jpeg" if kind == "image" else "audio/mpeg"
            locator = {"kind": kind, "file": segment.get("file") or ""}
            name = segment.get("file")
            attachments.append(InboundAttachment(media, name=name, fetcher=self.fetcher, locator=locator))
            return ""
        if kind == "file" and segment.get("url"):
            name = segment.get("name") or segment.get("file") or "file"
            size = _size(segment.get("file_size") or segment.get("size"))
            if size is not None and size > self.account.max_download_bytes:
                return f"[file {name}: {size} bytes, over the download limit]"
            locator = {"kind": "file", "url": segment.get("url") or ""}
            item = InboundAttachment("application/octet-stream", name, size, fetcher=self.fetcher, locator=locator)
            attachments.append(item)
            return ""
        if kind == "forward" and segment.get("id"):
            return f"[forwarded messages: read onebot://{self.self_id}/forward/{segment.get('id')}]"
        return f"[{kind}: {json.dumps(dict(segment.data), ensure_ascii=False, sort_keys=True)}]"

    async def _quote(self, message_id: str) -> Quote:
        found = await self.lookup(message_id)
        if not found:
            return Quote(message_id=message_id)
        sender = _mapping(found.get("sender"))
        user_id = sender.get("user_id")
        try:
            quoted = self._read(parse_message(found.get("message", "")))[0]
        except EventInvalid:
            quoted = ""
        if len(quoted) > _QUOTE_CHARS:
            quoted = quoted[:_QUOTE_CHARS] + "…"
        user = User(id=str(user_id), name=_name(sender)) if isinstance(user_id, int | str) and user_id else None
        return Quote(message_id=message_id, text=quoted, user=user, from_self=str(user_id) == self.self_id)

    def _recall(self, frame: Mapping[str, Any], now: float) -> Shaped:
        message_id = _require(frame.get("message_id"), int, "message_id")
        if frame["notice_type"] == "group_recall":
            channel = channel_id("group", _require(frame.get("group_id"), int, "group_id"))
        else:
            channel = channel_id("private", _require(frame.get("user_id"), int, "user_id"))
        operator = frame.get("operator_id", frame.get("user_id"))
        event = IshikiEvent(
            kind="message.deleted",
            platform=PLATFORM,
            self_id=self.self_id,
            channel_id=channel,
            message_id=str(message_id),
            timestamp=_time(frame, now),
            user=User(id=str(operator)) if isinstance(operator, int) and not isinstance(operator, bool) else None,
            extra={"noticeType": frame["notice_type"]},
        )
        return Shaped(event)


def _time(frame: Mapping[str, Any], default: float) -> float:
    """The frame's ``time`` (seconds since the epoch), or ``default`` when it has none."""
    time = frame.get("time")
    return float(time) if isinstance(time, int | float) and not isinstance(time, bool) else default


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _name(sender: Mapping[str, Any]) -> str | None:
    for key in ("card", "nickname"):
        value = sender.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _size(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None
