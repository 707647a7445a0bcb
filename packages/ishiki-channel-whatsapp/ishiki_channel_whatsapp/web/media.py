"""Inbound media: which files of a message become lazy attachments, and the fetcher that downloads them.

Nothing is downloaded while a message is handled, so a download that would fail never holds the message back:
each file becomes an ``InboundAttachment`` whose locator is the file's download coordinates
(``wire.MediaFile.locator``: CDN path, hashes, and the media key that decrypts this one file), fetched through
the linked device on first read. A download that fails then (the device is offline, WhatsApp's CDN dropped the
file after some weeks) is a ``ResourceError`` saying so, at that read only. A file over the account's
``max_download_bytes`` is not attached at all; a note in the message text tells the model it was there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ishiki_host import InboundAttachment, Json
from ishiki_host.errors import ResourceError

from ishiki_channel_whatsapp.web.errors import WhatsAppWebError, WhatsAppWebUnavailable

if TYPE_CHECKING:
    from ishiki_host import AssetFetcher

    from ishiki_channel_whatsapp.web.client import WebClient
    from ishiki_channel_whatsapp.web.wire import MediaFile

__all__ = ["MediaFound", "make_fetcher", "media_found"]


@dataclass(slots=True)
class MediaFound:
    """What a message carries: attachments to capture, and notes about files left out."""

    attachments: list[InboundAttachment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refused: list[Json] = field(default_factory=list)


def media_found(media: MediaFile | None, limit: int, fetcher: str) -> MediaFound:
    """The attachment of ``media`` (a file up to ``limit`` bytes), fetched later by ``fetcher``."""
    found = MediaFound()
    if media is None:
        return found
    if media.size is not None and media.size > limit:
        found.notes.append(
            f"[{media.kind} {media.name!r} ({_mb(media.size)}) was not downloaded: it is over the {_mb(limit)} limit]"
        )
        found.refused.append({"kind": media.kind, "name": media.name, "size": media.size, "reason": "too_large"})
        return found
    found.attachments.append(
        InboundAttachment(
            media_type=media.media_type, name=media.name, size=media.size, fetcher=fetcher, locator=media.locator
        )
    )
    return found


def make_fetcher(client: Callable[[], WebClient | None], limit: int) -> AssetFetcher:
    """A fetcher for ``AssetFetchers``: the file of a locator, through the device ``client()`` (``None``: not
    connected now)."""

    async def fetch(locator: Mapping[str, Any]) -> bytes:
        size = locator.get("fileLength")
        if isinstance(size, int) and size > limit:
            raise ResourceError("too_large", f"the file is {_mb(size)}; the limit is {_mb(limit)}")
        current = client()
        if current is None:
            raise ResourceError("unavailable", "the WhatsApp linked device is not connected; try again once it is")
        try:
            data = await current.download(locator)
        except WhatsAppWebUnavailable:
            raise ResourceError(
                "unavailable", "the WhatsApp linked device is not connected; try again once it is"
            ) from None
        except WhatsAppWebError as exc:
            raise ResourceError("fetch_failed", f"WhatsApp could not download the file: {exc.details}") from None
        if len(data) > limit:
            raise ResourceError("too_large", f"the file is {_mb(len(data))}; the limit is {_mb(limit)}")
        return data

    return fetch


def _mb(size: int) -> str:
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB" if size >= 1024 else f"{size} bytes"
    return f"{size / (1024 * 1024):.1f} MiB"
