"""Image parts for the model: ``asset://`` (and other resource) URLs become ``data:`` URLs, or text.

Inbound images are stored as image parts naming their resource URL. Before a request, a model that takes
images gets each as a ``data:`` URL read through the runtime's resource center (cached, so a window does not
re-read them every step); a model that does not, or an image that cannot be read, gets a short text note
instead (the attachment line of the message still names the URL, which ``read`` can describe).
"""

from __future__ import annotations

import base64
import logging
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING

from ishiki_host.core.messages import ImagePart, Message, Part, TextPart
from ishiki_host.errors import ResourceError

if TYPE_CHECKING:
    from ishiki_host.resources import ResourceCenter

__all__ = ["MAX_IMAGE_BYTES", "ImageResolver"]

logger = logging.getLogger(__name__)

MAX_IMAGE_BYTES = 5 * 1024 * 1024
_CACHE_SIZE = 16


class ImageResolver:
    """Rewrites the image parts of a request for one runtime (see the module docstring)."""

    def __init__(self, center: ResourceCenter, *, accepts_images: bool):
        self._center = center
        self._accepts = accepts_images
        self._cache: OrderedDict[str, str] = OrderedDict()

    async def resolve(self, messages: list[Message]) -> list[Message]:
        """``messages`` with every non-``data:`` image part resolved or replaced by a note."""
        out = []
        for message in messages:
            # ImagePart not among the part types: checked first, at C speed (a long window is mostly text)
            if ImagePart not in map(type, message.parts) or not any(
                isinstance(p, ImagePart) and not p.url.startswith("data:") for p in message.parts
            ):
                out.append(message)
                continue
            parts = [await self._part(p) if isinstance(p, ImagePart) else p for p in message.parts]
            out.append(replace(message, parts=tuple(parts)))
        return out

    async def _part(self, part: ImagePart) -> Part:
        if part.url.startswith("data:"):
            return part
        if not self._accepts:
            return TextPart(f"\n[image {part.url}: this model does not take images]")
        cached = self._cache.get(part.url)
        if cached is None:
            try:
                blob = await self._center.read_bytes(part.url, max_bytes=MAX_IMAGE_BYTES)
            except ResourceError as exc:
                logger.info("image %s not shown to the model: %s", part.url, exc)
                return TextPart(f"\n[image {part.url} could not be shown: {exc}]")
            cached = f"data:{blob.media_type};base64,{base64.b64encode(blob.data).decode('ascii')}"
            self._cache[part.url] = cached
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        self._cache.move_to_end(part.url)
        return ImagePart(cached, part.media_type)
