"""Inbound media: the file of an image, document, audio, video or sticker message as a lazy attachment, and
the fetcher that downloads it.

Nothing is downloaded while the webhook is answered: the attachment's locator holds the media id (never the
token), and the fetcher registered under the account's sid downloads it on first read, in Meta's two steps:
``GET /{version}/{media-id}`` gives a short-lived URL (and the size), then that URL is read with the bearer
token. A media id stays valid for 30 days; the URL for five minutes, so it is asked for each time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host import InboundAttachment
from ishiki_host.errors import ResourceError

from ishiki_channel_whatsapp.errors import WhatsAppAuthError, WhatsAppBadRequest, WhatsAppError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ishiki_host import AssetFetcher

    from ishiki_channel_whatsapp.cloud.graph import GraphAPI

__all__ = ["MEDIA_KINDS", "attachment_of", "make_fetcher"]

MEDIA_KINDS: Mapping[str, tuple[str, str]] = {
    "image": ("image/jpeg", "image.jpg"),
    "document": ("application/octet-stream", "document"),
    "audio": ("audio/ogg", "audio.ogg"),
    "video": ("video/mp4", "video.mp4"),
    "sticker": ("image/webp", "sticker.webp"),
}
"""Message types that carry one file: its default media type and file name."""


def attachment_of(kind: str, item: Mapping[str, Any], fetcher: str) -> InboundAttachment | None:
    """The lazy attachment of a media object (``{"id", "mime_type", "filename"?...}``), or ``None`` without an id."""
    media_id = item.get("id")
    if kind not in MEDIA_KINDS or not isinstance(media_id, str) or not media_id:
        return None
    default_type, default_name = MEDIA_KINDS[kind]
    mime = item.get("mime_type")
    media_type = mime.split(";")[0].strip() if isinstance(mime, str) and mime.strip() else default_type
    name = item.get("filename") if isinstance(item.get("filename"), str) and item["filename"] else default_name
    return InboundAttachment(media_type=media_type, name=name, fetcher=fetcher, locator={"media_id": media_id})


def make_fetcher(api: GraphAPI, limit: int, on_auth_error: Callable[[WhatsAppAuthError], None]) -> AssetFetcher:
    """A fetcher for ``AssetFetchers``: the media URL of the locator's ``media_id``, then its bytes.

    A refused token is also told to ``on_auth_error`` (the connection then stops with it).
    """

    async def fetch(locator: Mapping[str, Any]) -> bytes:
        media_id = locator.get("media_id")
        if not isinstance(media_id, str) or not media_id:
            raise ResourceError("not_found", "the WhatsApp locator has no media_id")
        try:
            info = await api.get(media_id, what="media info")
            size = info.get("file_size")
            if isinstance(size, int) and size > limit:
                raise ResourceError("too_large", f"the file is {_mb(size)}; the limit is {_mb(limit)}")
            url = info.get("url")
            if not isinstance(url, str) or not url:
                raise ResourceError("unavailable", "the Graph API gave no URL for this media")
            return await api.download(url, limit)
        except WhatsAppAuthError as exc:
            on_auth_error(exc)
            raise ResourceError("fetch_failed", str(exc)) from None
        except WhatsAppBadRequest as exc:
            if "too big" in exc.details:
                raise ResourceError("too_large", f"the download stopped: {exc.details}") from None
            raise ResourceError("fetch_failed", str(exc)) from None
        except WhatsAppError as exc:
            raise ResourceError("fetch_failed", str(exc)) from None

    return fetch


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"
