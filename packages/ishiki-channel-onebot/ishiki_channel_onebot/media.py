"""The attachment fetcher of an account: the bytes of an inbound image, voice record or file, on first read.

The shaper captures media lazily, with a locator holding no secret: ``{"kind": "image" | "record", "file":
<file id>}`` or ``{"kind": "file", "url": <url>}``. The fetcher asks ``get_image`` / ``get_record`` where the
implementation keeps the file and downloads it (``OneBotAPI.download``), or GETs the file's URL; a failed
action is ``fetch_failed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host.errors import ResourceError

from ishiki_channel_onebot.errors import OneBotError

if TYPE_CHECKING:
    from ishiki_host import AssetFetcher

    from ishiki_channel_onebot.api import OneBotAPI

__all__ = ["make_fetcher"]


def make_fetcher(api: OneBotAPI) -> AssetFetcher:
    """The fetcher to register under the account's sid."""

    async def fetch(locator: Mapping[str, Any]) -> bytes:
        kind = locator.get("kind")
        try:
            if kind == "image":
                return await api.download(await api.get_image(str(locator.get("file"))))
            if kind == "record":
                return await api.download(await api.get_record(str(locator.get("file"))))
            if kind == "file" and isinstance(locator.get("url"), str):
                return await api.fetch(str(locator["url"]))
        except OneBotError as exc:
            raise ResourceError("fetch_failed", str(exc)) from None
        raise ResourceError("fetch_failed", f"a OneBot attachment of kind {kind!r} cannot be fetched")

    return fetch
