"""The ``onebot://`` scheme: platform resources of a running OneBot account, read through its actions.

- ``onebot://<self_id>/image/<file>``: an image by the file id its segment named (``get_image``);
- ``onebot://<self_id>/record/<file>``: a voice record, as MP3 (``get_record``);
- ``onebot://<self_id>/forward/<id>``: a forwarded message as text, one line per node (``Name (qq): text``;
  a forward inside it is named by its own ``onebot://`` URL) (``get_forward_msg``);
- ``onebot://<self_id>/message/<message id>``: one message as text (``get_msg``).

Bytes and texts are cached under the runtime's home (``onebot/<hash>.data``), so a second read needs no action
and survives the implementation forgetting the file. A URL naming an account that does not run here is
``unavailable``; a failed action is ``fetch_failed`` (with its retcode); anything else is ``not_found``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from ishiki_host import Resource, guess_media_type
from ishiki_host.errors import ResourceError

from ishiki_channel_onebot.errors import OneBotError
from ishiki_channel_onebot.segments import parse_message

if TYPE_CHECKING:
    from ishiki_host import ResourceRequest

    from ishiki_channel_onebot.api import OneBotAPI
    from ishiki_channel_onebot.bots import OneBotBots

__all__ = ["SCHEME", "OneBotResources", "describe_segments"]

SCHEME = "onebot"
_KINDS = ("image", "record", "forward", "message")


class OneBotResources:
    """The ``onebot://`` handler of one runtime, caching in ``cache_dir`` (see the module docstring)."""

    def __init__(self, bots: OneBotBots, cache_dir: Path):
        self._bots = bots
        self._cache = cache_dir

    async def read(self, request: ResourceRequest) -> Resource:
        """Serve one ``onebot://`` URL."""
        url = request.url
        if len(url.path_segments) != 2 or url.path_segments[0] not in _KINDS:
            raise ResourceError("not_found", f"{url}: onebot://<self_id>/<{'|'.join(_KINDS)}>/<id> is expected")
        kind, item = url.path_segments
        cached = self._cache / (hashlib.sha256(str(url).encode("utf-8")).hexdigest()[:32] + ".data")
        if await anyio.Path(cached).is_file():
            return self._resource(kind, item, await anyio.Path(cached).read_bytes())
        api = self._bots.get(url.authority)
        if api is None:
            raise ResourceError("unavailable", f"{url}: OneBot account {url.authority} does not run in this host")
        try:
            data = await self._fetch(api, url.authority, kind, item)
        except OneBotError as exc:
            raise ResourceError("fetch_failed", f"{url}: {exc}") from None
        await anyio.Path(self._cache).mkdir(parents=True, exist_ok=True)
        await anyio.Path(cached).write_bytes(data)
        return self._resource(kind, item, data)

    async def _fetch(self, api: OneBotAPI, self_id: str, kind: str, item: str) -> bytes:
        if kind == "image":
            return await api.download(await api.get_image(item))
        if kind == "record":
            return await api.download(await api.get_record(item))
        if kind == "forward":
            nodes = (await api.get_forward_msg(item)).get("messages")
            lines = [_node_line(node, self_id) for node in nodes] if isinstance(nodes, list) else []
            return "\n".join(line for line in lines if line).encode("utf-8")
        found = await api.get_msg(item)
        return _node_line(found, self_id).encode("utf-8")

    @staticmethod
    def _resource(kind: str, item: str, data: bytes) -> Resource:
        if kind in ("forward", "message"):
            return Resource(text=data.decode("utf-8", "replace"), media_type="text/plain", size=len(data))
        media_type = guess_media_type(item, data[:64])
        return Resource(data=data, media_type=media_type, size=len(data), name=item)


def describe_segments(message: Any, self_id: str) -> str:
    """The text of a message's segments as the channel shows them (``shaping``), for forwarded nodes."""
    try:
        segments = parse_message(message)
    except Exception:
        return ""
    parts: list[str] = []
    for segment in segments:
        if segment.type == "text":
            parts.append(segment.get("text") or "")
        elif segment.type == "at":
            parts.append(f"@{segment.get('qq')}")
        elif segment.type == "image":
            parts.append(f"[image onebot://{self_id}/image/{segment.get('file')}]")
        elif segment.type == "forward":
            parts.append(f"[forwarded messages: onebot://{self_id}/forward/{segment.get('id')}]")
        else:
            parts.append(f"[{segment.type}: {json.dumps(dict(segment.data), ensure_ascii=False, sort_keys=True)}]")
    return "".join(parts).strip()


def _node_line(node: Mapping[str, Any], self_id: str) -> str:
    if not isinstance(node, dict):
        return ""
    inner = node.get("data")
    data: Mapping[str, Any] = inner if node.get("type") == "node" and isinstance(inner, dict) else node
    sender = data.get("sender")
    sender = sender if isinstance(sender, dict) else {}
    name = sender.get("card") or sender.get("nickname") or data.get("nickname") or data.get("name") or "?"
    qq = sender.get("user_id", data.get("user_id", data.get("uin", "?")))
    content = data.get("message", data.get("content", ""))
    return f"{name} ({qq}): {describe_segments(content, self_id)}"
