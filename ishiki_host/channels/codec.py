"""The JSON form of the channel types that travel between processes: events, attachments, sends, drafts.

What crosses between a supervisor and its workers (``ishiki_host.workers``), and what a host of a fleet puts in
the fleet's inbox for the host that serves the runtime (``ishiki_host.host.fleet``). Each ``*_json`` has its
inverse ``*_from``; bytes travel as base64. A value that does not decode raises ``FrameError`` (a worker's link
that sent it is reset, as for a frame that does not parse; an inbox event is set aside): the sender retries
from what is durable. Events use their own stored form (``IshikiEvent.to_dict``), so the receiver reads exactly
what a fact log would hold.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, cast

from ishiki_host.channels.base import Draft, InboundAttachment, OutboundFile, SendResult, TurnActivity
from ishiki_host.channels.events import IshikiEvent
from ishiki_host.errors import EventInvalid, IshikiError
from ishiki_host.jsontypes import Json
from ishiki_host.resources import Blob

__all__ = [
    "FrameError",
    "activity_from",
    "activity_json",
    "attachment_from",
    "attachment_json",
    "bytes_from",
    "bytes_json",
    "draft_from",
    "draft_json",
    "event_from",
    "file_from",
    "file_json",
    "result_from",
    "result_json",
]

_ACTIVITY_STATES = ("thinking", "tool", "writing", "done")


class FrameError(IshikiError):
    """A frame between processes (or a message or value in it) that does not parse."""


def bytes_json(data: bytes) -> str:
    """``data`` as base64 text."""
    return base64.b64encode(data).decode("ascii")


def bytes_from(text: object) -> bytes:
    """The bytes of a base64 text (``FrameError`` when it is none)."""
    if not isinstance(text, str):
        raise FrameError(f"expected base64 text, got {type(text).__name__}")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FrameError(f"bad base64 data: {exc}") from None


def event_from(data: object) -> IshikiEvent:
    """The event of its stored form (``IshikiEvent.to_dict``)."""
    try:
        return IshikiEvent.from_dict(_mapping(data, "event"))
    except EventInvalid as exc:
        raise FrameError(f"bad event: {exc}") from None


def attachment_json(attachment: InboundAttachment) -> dict[str, Json]:
    """One inbound attachment (its bytes, when it has them, as base64)."""
    return {
        "media_type": attachment.media_type,
        "name": attachment.name,
        "size": attachment.size,
        "data": bytes_json(attachment.data) if attachment.data is not None else None,
        "fetcher": attachment.fetcher,
        "locator": dict(attachment.locator),
    }


def attachment_from(data: object) -> InboundAttachment:
    """Inverse of ``attachment_json``."""
    block = _mapping(data, "attachment")
    raw = block.get("data")
    try:
        return InboundAttachment(
            media_type=_text(block.get("media_type"), "attachment media_type"),
            name=_optional_text(block.get("name"), "attachment name"),
            size=_optional_int(block.get("size"), "attachment size"),
            data=bytes_from(raw) if raw is not None else None,
            fetcher=_optional_text(block.get("fetcher"), "attachment fetcher"),
            locator=dict(_mapping(block.get("locator") or {}, "attachment locator")),
        )
    except TypeError as exc:
        raise FrameError(f"bad attachment: {exc}") from None


def result_json(result: SendResult) -> dict[str, Json]:
    """What a send delivered."""
    return {"ids": list(result.ids), "error": result.error}


def result_from(data: object) -> SendResult:
    """Inverse of ``result_json``."""
    block = _mapping(data, "send result")
    ids = block.get("ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise FrameError("bad send result: ids must be a list of strings")
    return SendResult(ids=tuple(cast("list[str]", ids)), error=_optional_text(block.get("error"), "send error"))


def draft_json(draft: Draft) -> dict[str, Json]:
    """A draft being shown."""
    return {"id": draft.id, "text": draft.text, "reply_to": draft.reply_to}


def draft_from(data: object) -> Draft:
    """Inverse of ``draft_json``."""
    block = _mapping(data, "draft")
    return Draft(
        id=_text(block.get("id"), "draft id"),
        text=_text(block.get("text"), "draft text"),
        reply_to=_optional_text(block.get("reply_to"), "draft reply_to"),
    )


def activity_json(activity: TurnActivity) -> dict[str, Json]:
    """What a running turn is doing."""
    return {
        "state": activity.state,
        "started_at": activity.started_at,
        "model": activity.model,
        "tool": activity.tool,
        "step": activity.step,
    }


def activity_from(data: object) -> TurnActivity:
    """Inverse of ``activity_json``."""
    block = _mapping(data, "activity")
    state = block.get("state")
    started = block.get("started_at")
    step = block.get("step", 0)
    if state not in _ACTIVITY_STATES:
        raise FrameError(f"bad activity state {state!r}")
    if not isinstance(started, int | float) or isinstance(started, bool):
        raise FrameError("bad activity: started_at must be a number")
    return TurnActivity(
        state=cast("Any", state),
        started_at=float(started),
        model=_optional_text(block.get("model"), "activity model"),
        tool=_optional_text(block.get("tool"), "activity tool"),
        step=_optional_int(step, "activity step") or 0,
    )


def file_json(file: OutboundFile) -> dict[str, Json]:
    """A file to send, with its bytes."""
    blob = file.blob
    return {
        "data": bytes_json(blob.data),
        "media_type": blob.media_type,
        "name": blob.name,
        "caption": file.caption,
        "extra": dict(file.extra),
    }


def file_from(data: object) -> OutboundFile:
    """Inverse of ``file_json``."""
    block = _mapping(data, "file")
    extra = _mapping(block.get("extra") or {}, "file extra")
    if not all(isinstance(v, str) for v in extra.values()):
        raise FrameError("bad file: extra values must be strings")
    blob = Blob(
        data=bytes_from(block.get("data")),
        media_type=_text(block.get("media_type"), "file media_type"),
        name=_optional_text(block.get("name"), "file name"),
    )
    return OutboundFile(blob, _optional_text(block.get("caption"), "file caption"), cast("dict[str, str]", extra))


def _mapping(value: object, what: str) -> Mapping[str, Json]:
    if not isinstance(value, Mapping):
        raise FrameError(f"bad {what}: expected an object, got {type(value).__name__}")
    return cast("Mapping[str, Json]", value)


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise FrameError(f"bad {what}: expected text, got {type(value).__name__}")
    return value


def _optional_text(value: object, what: str) -> str | None:
    return None if value is None else _text(value, what)


def _optional_int(value: object, what: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise FrameError(f"bad {what}: expected an integer, got {type(value).__name__}")
    return value
