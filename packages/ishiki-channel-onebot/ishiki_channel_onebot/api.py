"""``OneBotAPI``: the actions the channel uses, typed, over ``Actions``, and the download of media they name.

``send_private_msg`` / ``send_group_msg`` (the ``message_id`` sent), ``delete_msg``, ``get_login_info``,
``get_msg``, ``get_image`` / ``get_record`` (where the implementation keeps the file) and ``get_forward_msg``.
``download`` gets the bytes such an answer names: ``base64`` when the implementation inlined them, else its
``url`` (HTTP), else its ``file`` when that is a path on this machine (NapCat and Lagrange keep media in their
cache directory; they run beside the host, or the path is not there and the URL is used). At most
``max_bytes`` are read.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from ishiki_host.errors import ResourceError

from ishiki_channel_onebot.errors import OneBotError
from ishiki_channel_onebot.segments import Segment, to_json

if TYPE_CHECKING:
    from ishiki_channel_onebot.actions import Actions

__all__ = ["OneBotAPI"]


class OneBotAPI:
    """The actions of one account (see the module docstring); ``client`` downloads media by URL."""

    def __init__(self, actions: Actions, client: httpx.AsyncClient, *, max_bytes: int):
        self.actions = actions
        self._client = client
        self._max_bytes = max_bytes

    async def send_private_msg(self, user_id: int, message: Sequence[Segment]) -> str:
        """Send ``message`` to ``user_id``; the message id."""
        data = await self.actions.call("send_private_msg", {"user_id": user_id, "message": to_json(list(message))})
        return _message_id(data, "send_private_msg")

    async def send_group_msg(self, group_id: int, message: Sequence[Segment]) -> str:
        """Send ``message`` to the group ``group_id``; the message id."""
        data = await self.actions.call("send_group_msg", {"group_id": group_id, "message": to_json(list(message))})
        return _message_id(data, "send_group_msg")

    async def delete_msg(self, message_id: str) -> None:
        """Recall ``message_id`` (the bot's own, or any in a group it administers)."""
        await self.actions.call("delete_msg", {"message_id": _int_id(message_id)})

    async def get_login_info(self) -> Mapping[str, Any]:
        """``user_id`` and ``nickname`` of the logged-in account."""
        return _object(await self.actions.call("get_login_info"), "get_login_info")

    async def get_msg(self, message_id: str, *, deadline: float | None = None) -> Mapping[str, Any]:
        """One message: ``message``, ``sender``, ``time``, ``message_type``... (``deadline`` replaces the
        account's ``action_timeout``)."""
        data = await self.actions.call("get_msg", {"message_id": _int_id(message_id)}, deadline=deadline)
        return _object(data, "get_msg")

    async def get_image(self, file: str) -> Mapping[str, Any]:
        """Where the image ``file`` is (``file``, ``url``, ``base64``...)."""
        return _object(await self.actions.call("get_image", {"file": file}), "get_image")

    async def get_record(self, file: str, out_format: str = "mp3") -> Mapping[str, Any]:
        """Where the voice record ``file`` is, converted to ``out_format``."""
        return _object(await self.actions.call("get_record", {"file": file, "out_format": out_format}), "get_record")

    async def get_forward_msg(self, forward_id: str) -> Mapping[str, Any]:
        """The nodes of a forwarded message (``messages``)."""
        return _object(await self.actions.call("get_forward_msg", {"id": forward_id}), "get_forward_msg")

    async def download(self, found: Mapping[str, Any]) -> bytes:
        """The bytes ``found`` (an answer of ``get_image`` / ``get_record``) names; ``ResourceError``
        (``fetch_failed``, ``too_large``) when they cannot be had."""
        inline = found.get("base64")
        if isinstance(inline, str) and inline:
            try:
                return self._capped(base64.b64decode(inline.removeprefix("base64://"), validate=True))
            except binascii.Error:
                raise ResourceError("fetch_failed", "the implementation inlined bytes that are not base64") from None
        path = found.get("file")
        if isinstance(path, str) and Path(path).is_absolute() and await anyio.Path(path).is_file():
            return self._capped(await anyio.Path(path).read_bytes())
        url = found.get("url")
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            return await self.fetch(url)
        raise ResourceError("fetch_failed", "the implementation gave neither bytes, a local file nor a URL")

    async def fetch(self, url: str) -> bytes:
        """GET ``url`` (at most ``max_bytes``)."""
        try:
            async with self._client.stream("GET", url) as response:
                if response.status_code != 200:
                    raise ResourceError("fetch_failed", f"GET of the media answered {response.status_code}")
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    self._capped(b"", size)
                    chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise ResourceError("fetch_failed", f"the media could not be downloaded ({type(exc).__name__})") from None
        return b"".join(chunks)

    def _capped(self, data: bytes, size: int | None = None) -> bytes:
        if (len(data) if size is None else size) > self._max_bytes:
            raise ResourceError("too_large", f"the media is larger than {self._max_bytes} bytes")
        return data


def _int_id(message_id: str) -> int:
    try:
        return int(message_id)
    except ValueError:
        raise OneBotError(f"{message_id!r} is not a OneBot message id (a number)") from None


def _object(data: Any, action: str) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise OneBotError(f"{action} answered {type(data).__name__} data, not an object", action=action)
    return data


def _message_id(data: Any, action: str) -> str:
    message_id = _object(data, action).get("message_id")
    if isinstance(message_id, bool) or not isinstance(message_id, int | str):
        raise OneBotError(f"{action} answered without a message_id", action=action)
    return str(message_id)
