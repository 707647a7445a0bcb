"""Ingest: a shaped event becomes the ``data`` of a fact-log message entry.

Attachments a channel hands over (bytes, or a locator for a lazy fetch) are captured into the runtime's
``asset://`` store first; the stored event lists their URLs. The entry is ``{"role": "user", "parts",
"source": event.to_dict(), "trust"}``: ``parts`` holds the sender's own text (context engines add the header
from ``source``) and one image part per captured image (resolved for the model by the runtime); ``trust`` is
the sender's level. An attachment that could not be kept is listed in ``attachment_errors`` instead.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ishiki_host.addresses.ids import Target
from ishiki_host.channels.events import Attachment
from ishiki_host.errors import ResourceError

if TYPE_CHECKING:
    from ishiki_host.channels.base import InboundAttachment
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.resources import AssetStore

__all__ = ["capture_attachments", "inbound_message", "is_inbound", "source_target"]

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


def inbound_message(event: IshikiEvent, trust: TrustLevel, attachments: Sequence[Attachment] = ()) -> dict[str, Any]:
    """The entry data for ``event`` with ``attachments`` added to the ones it carries."""
    if attachments:
        event = dataclasses.replace(event, attachments=(*event.attachments, *attachments))
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
    source = entry.data.get("source")
    if not isinstance(source, Mapping):
        return None
    platform, self_id, channel = source.get("platform"), source.get("selfId"), source.get("channelId")
    if not (isinstance(platform, str) and isinstance(self_id, str) and isinstance(channel, str)):
        return None
    return Target(f"{platform}:{self_id}", channel)
