"""Ingest: a shaped event becomes the ``data`` of a fact-log message entry.

Attachments a channel hands over (bytes, or a locator for a lazy fetch) are captured into the runtime's
``asset://`` store first; the stored event lists their URLs. The entry is ``{"role": "user", "parts",
"source": event.to_dict(), "trust"}``: ``parts`` holds the sender's own text (context engines add the header
from ``source``) and one image part per captured image (resolved for the model by the runtime); ``trust`` is
the sender's level. An attachment that could not be kept is listed in ``attachment_errors`` instead.

Every string of the event (its text, the quote, names, ids, ``extra``) is made storable first
(``clean_event``): a lone UTF-16 surrogate, half an emoji, becomes U+FFFD and NULs are dropped, so no channel
can hand the host a message that the fact log, the memory database or a model request cannot carry.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ishiki_host.addresses.ids import Target
from ishiki_host.channels.events import Attachment, IshikiEvent
from ishiki_host.core.subjects import chat_coordinates
from ishiki_host.core.text import clean_json
from ishiki_host.errors import ResourceError

if TYPE_CHECKING:
    from ishiki_host.channels.base import InboundAttachment
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.resources import AssetStore

__all__ = ["capture_attachments", "clean_event", "inbound_message", "is_inbound", "source_target"]

logger = logging.getLogger(__name__)


async def capture_attachments(
    assets: AssetStore, attachments: Sequence[InboundAttachment]
) -> tuple[list[Attachment], list[str]]:
    """Capture each attachment; returns the stored ones and a note for each that was refused."""
    kept: list[Attachment] = []
    problems: list[str] = []
    for item in attachments:
        what = item.name or item.media_type
        try:
            if item.data is not None:
                url = await assets.capture(item.data, media_type=item.media_type, name=item.name)
                size: int | None = len(item.data)
            elif item.fetcher:
                url = await assets.capture_lazy(
                    item.fetcher, item.locator, media_type=item.media_type, name=item.name, size=item.size
                )
                size = item.size
            else:
                raise ResourceError("not_found", "the channel gave neither bytes nor a fetcher")
        except ResourceError as exc:
            logger.warning("attachment %s not kept: %s", what, exc)
            problems.append(f"{what}: {exc}")
            continue
        kept.append(Attachment(url, item.media_type, item.name, size))
    return kept, problems


def clean_event(event: IshikiEvent) -> IshikiEvent:
    """``event`` with every string in it storable (``ishiki_host.core.text.clean_text``); the same object when
    nothing needed it."""
    data = event.to_dict()
    cleaned = clean_json(data)
    return event if cleaned is data else IshikiEvent.from_dict(cleaned)


def inbound_message(event: IshikiEvent, trust: TrustLevel, attachments: Sequence[Attachment] = ()) -> dict[str, Any]:
    """The entry data for ``event`` (cleaned) with ``attachments`` added to the ones it carries."""
    if attachments:
        event = dataclasses.replace(event, attachments=(*event.attachments, *attachments))
    event = clean_event(event)
    created = event.kind == "message.created"
    text = event.content if created else f"(message {event.message_id} was deleted)"
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for attachment in event.attachments:
        if attachment.media_type.startswith("image/"):
            parts.append({"type": "image", "url": attachment.url, "media_type": attachment.media_type})
    data: dict[str, Any] = {"role": "user", "parts": parts, "source": event.to_dict()}
    if event.kind == "message.created":
        data["trust"] = trust
    return data


def is_inbound(entry: Entry) -> bool:
    """Whether ``entry`` is an inbound platform message (not a wake prompt, not the host's own)."""
    data = entry.data
    return (
        entry.type == "message"
        and data.get("role") == "user"
        and isinstance(data.get("source"), Mapping)
        and not data.get("wake")
    )


def source_target(entry: Entry) -> Target | None:
    """The channel an inbound entry came from (``sid`` + channel id), from its stored event."""
    found = chat_coordinates(entry)
    return Target(*found) if found is not None else None
