"""Inbound media: which files of a message become lazy attachments, and the fetcher that downloads them.

A photo arrives in several sizes; the largest one within the download limit is kept. Documents, voice notes,
audio, video, animations, video notes and stickers are one file each. Nothing is downloaded while the update is
handled: each file becomes an ``InboundAttachment`` whose locator holds Telegram's ``file_id`` (never the
token), downloaded by ``make_fetcher``'s fetcher on first read (``getFile``, then the file URL). A file over the
limit is not attached at all; a note in the message text tells the model it was there and why it is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ishiki_host import InboundAttachment
from ishiki_host.errors import ResourceError

from ishiki_channel_telegram.errors import TelegramBadRequest, TelegramError

if TYPE_CHECKING:
    from ishiki_host import AssetFetcher

    from ishiki_channel_telegram.api import BotAPI

__all__ = ["MediaFound", "find_media", "make_fetcher"]

# kind -> (default media type, default file name)
_SINGLE_FILE_KINDS: Mapping[str, tuple[str, str]] = {
    "document": ("application/octet-stream", "document"),
    "voice": ("audio/ogg", "voice.ogg"),
    "audio": ("audio/mpeg", "audio.mp3"),
    "video": ("video/mp4", "video.mp4"),
    "animation": ("video/mp4", "animation.mp4"),
    "video_note": ("video/mp4", "video_note.mp4"),
}


@dataclass(slots=True)
class MediaFound:
    """What a message carries: attachments to capture, and notes about files left out."""

    attachments: list[InboundAttachment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)


def find_media(message: Mapping[str, Any], limit: int, fetcher: str) -> MediaFound:
    """The attachments of ``message`` (files up to ``limit`` bytes), fetched later by ``fetcher``."""
    found = MediaFound()
    photo = message.get("photo")
    if isinstance(photo, list) and photo:
        _photo(found, photo, limit, fetcher)
    for kind, (media_type, name) in _SINGLE_FILE_KINDS.items():
        item = message.get(kind)
        if isinstance(item, dict):
            _add(found, kind, item, item.get("mime_type") or media_type, item.get("file_name") or name, limit, fetcher)
    sticker = message.get("sticker")
    if isinstance(sticker, dict):
        media_type, ext = _sticker_format(sticker)
        _add(found, "sticker", sticker, media_type, f"sticker{ext}", limit, fetcher)
    return found


def _photo(found: MediaFound, sizes: Sequence[Any], limit: int, fetcher: str) -> None:
    valid = [size for size in sizes if isinstance(size, dict) and isinstance(size.get("file_id"), str)]
    fitting = [size for size in valid if not isinstance(size.get("file_size"), int) or size["file_size"] <= limit]
    if fitting:
        best = max(fitting, key=lambda size: (_area(size), size.get("file_size") or 0))
        _add(found, "photo", best, "image/jpeg", "photo.jpg", limit, fetcher)
    elif valid:
        _add(found, "photo", min(valid, key=lambda size: size["file_size"]), "image/jpeg", "photo.jpg", limit, fetcher)


def _area(size: Mapping[str, Any]) -> int:
    width, height = size.get("width"), size.get("height")
    return width * height if isinstance(width, int) and isinstance(height, int) else 0


def _sticker_format(sticker: Mapping[str, Any]) -> tuple[str, str]:
    if sticker.get("is_animated"):
        return "application/x-tgsticker", ".tgs"
    if sticker.get("is_video"):
        return "video/webm", ".webm"
    return "image/webp", ".webp"


def _add(
    found: MediaFound, kind: str, item: Mapping[str, Any], media_type: str, name: str, limit: int, fetcher: str
) -> None:
    file_id = item.get("file_id")
    if not isinstance(file_id, str) or not file_id:
        return
    size = item.get("file_size") if isinstance(item.get("file_size"), int) else None
    if size is not None and size > limit:
        found.notes.append(f"[{kind} {name!r} ({_mb(size)}) was not downloaded: it is over the {_mb(limit)} limit]")
        found.refused.append({"kind": kind, "name": name, "size": size, "reason": "too_large"})
        return
    locator = {"file_id": file_id, "file_unique_id": item.get("file_unique_id")}
    found.attachments.append(
        InboundAttachment(media_type=str(media_type), name=name, size=size, fetcher=fetcher, locator=locator)
    )


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def make_fetcher(api: BotAPI, limit: int) -> AssetFetcher:
    """A fetcher for ``AssetFetchers``: ``getFile`` for the locator's ``file_id``, then the download."""

    async def fetch(locator: Mapping[str, Any]) -> bytes:
        file_id = locator.get("file_id")
        if not isinstance(file_id, str) or not file_id:
            raise ResourceError("not_found", "the Telegram locator has no file_id")
        try:
            info = await api.call("getFile", {"file_id": file_id})
            size = info.get("file_size") if isinstance(info, dict) else None
            if isinstance(size, int) and size > limit:
                raise ResourceError("too_large", f"the file is {_mb(size)}; the limit is {_mb(limit)}")
            path = info.get("file_path") if isinstance(info, dict) else None
            if not isinstance(path, str) or not path:
                raise ResourceError("unavailable", "Telegram gave no file_path for this file")
            return await api.download(path, limit)
        except TelegramBadRequest as exc:
            if "too big" in exc.description.lower():
                raise ResourceError("too_large", f"Telegram refused the download: {exc.description}") from None
            raise ResourceError("fetch_failed", str(exc)) from None
        except TelegramError as exc:
            raise ResourceError("fetch_failed", str(exc)) from None

    return fetch
