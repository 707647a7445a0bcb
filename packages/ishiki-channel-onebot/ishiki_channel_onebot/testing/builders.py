"""Event frames as a OneBot v11 implementation sends them, for tests: messages, recalls and meta-events.

Each builder returns the frame as a ``dict`` (the fake sends it as JSON). ``message`` may be a string (one text
segment), a ``Segment``, or a list of them; ``as_cq=True`` sends it in the CQ-code string form instead of the
array form. Message ids come from one counter per process, so two frames never share one by accident.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from ishiki_channel_onebot.segments import Segment, cq_escape, text, to_json

__all__ = [
    "MessageLike",
    "group_message",
    "group_recall",
    "heartbeat",
    "lifecycle",
    "next_message_id",
    "private_message",
    "private_recall",
    "to_segments",
]

MessageLike = str | Segment | list[Segment]

_IDS = itertools.count(1000)


def next_message_id() -> int:
    """A message id no other frame of this process has."""
    return next(_IDS)


def to_segments(message: MessageLike) -> list[Segment]:
    """``message`` as a list of segments."""
    if isinstance(message, str):
        return [text(message)]
    return [message] if isinstance(message, Segment) else list(message)


def _message_field(message: MessageLike, as_cq: bool) -> Any:
    segments = to_segments(message)
    return "".join(_cq(s) for s in segments) if as_cq else to_json(segments)


def _cq(segment: Segment) -> str:
    if segment.type == "text":
        return cq_escape(str(segment.data.get("text", "")))
    params = "".join(f",{key}={cq_escape(str(value), in_code=True)}" for key, value in segment.data.items())
    return f"[CQ:{segment.type}{params}]"


def private_message(
    self_id: int,
    user_id: int,
    message: MessageLike,
    *,
    nickname: str = "Alice",
    message_id: int | None = None,
    as_cq: bool = False,
) -> dict[str, Any]:
    """A private message event from ``user_id`` to the bot ``self_id``."""
    return {
        "time": int(time.time()),
        "self_id": self_id,
        "post_type": "message",
        "message_type": "private",
        "sub_type": "friend",
        "message_id": message_id if message_id is not None else next_message_id(),
        "user_id": user_id,
        "message": _message_field(message, as_cq),
        "raw_message": "".join(s.data.get("text", "") for s in to_segments(message)),
        "font": 0,
        "sender": {"user_id": user_id, "nickname": nickname, "sex": "unknown", "age": 0},
    }


def group_message(
    self_id: int,
    group_id: int,
    user_id: int,
    message: MessageLike,
    *,
    nickname: str = "Bob",
    card: str = "",
    role: str = "member",
    message_id: int | None = None,
    as_cq: bool = False,
) -> dict[str, Any]:
    """A message event in the group ``group_id`` from ``user_id`` (``card``: their group nickname)."""
    frame = private_message(self_id, user_id, message, nickname=nickname, message_id=message_id, as_cq=as_cq)
    frame.update(message_type="group", sub_type="normal", group_id=group_id, anonymous=None)
    frame["sender"] = {"user_id": user_id, "nickname": nickname, "card": card, "role": role}
    return frame


def group_recall(
    self_id: int, group_id: int, user_id: int, message_id: int, *, operator_id: int | None = None
) -> dict[str, Any]:
    """A ``group_recall`` notice: ``message_id`` was recalled (by ``operator_id``, default its sender)."""
    return {
        "time": int(time.time()),
        "self_id": self_id,
        "post_type": "notice",
        "notice_type": "group_recall",
        "group_id": group_id,
        "user_id": user_id,
        "operator_id": operator_id if operator_id is not None else user_id,
        "message_id": message_id,
    }


def private_recall(self_id: int, user_id: int, message_id: int) -> dict[str, Any]:
    """A ``friend_recall`` notice: ``user_id`` recalled ``message_id``."""
    return {
        "time": int(time.time()),
        "self_id": self_id,
        "post_type": "notice",
        "notice_type": "friend_recall",
        "user_id": user_id,
        "message_id": message_id,
    }


def heartbeat(self_id: int, interval_ms: int = 5000) -> dict[str, Any]:
    """A heartbeat meta-event stating its ``interval`` in milliseconds."""
    return {
        "time": int(time.time()),
        "self_id": self_id,
        "post_type": "meta_event",
        "meta_event_type": "heartbeat",
        "status": {"online": True, "good": True},
        "interval": interval_ms,
    }


def lifecycle(self_id: int, sub_type: str = "connect") -> dict[str, Any]:
    """A lifecycle meta-event (``connect`` when a WebSocket opens)."""
    return {
        "time": int(time.time()),
        "self_id": self_id,
        "post_type": "meta_event",
        "meta_event_type": "lifecycle",
        "sub_type": sub_type,
    }
