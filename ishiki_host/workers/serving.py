"""What a supervisor serves its workers: the channel operations of their runtimes, made on its connections.

Each handler takes the params of one request from a worker (``ishiki_host.workers.outlets`` sends them) and
makes the call on the live connection of the sid named: ``channel.send``, ``channel.typing``,
``channel.files``, ``channel.draft.show`` / ``.finish`` / ``.drop``, ``channel.activity``,
``channel.failure``, ``channel.note_sent`` (the ids a worker's runtime sent, for echo dropping here, where
events come in), and ``asset.fetch`` (a lazily captured attachment's bytes, from the channel's fetcher).

A sid with no live connection (it went down meanwhile) is ``ChannelUnavailable``, as a send through a
connection that is gone would fail in one process. Params that do not have the expected shape raise
``FrameError``: the link is reset and the worker retries from what is durable.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ishiki_host.channels.base import DraftingConnection
from ishiki_host.channels.codec import activity_from, bytes_json, draft_from, file_from, result_json
from ishiki_host.errors import ChannelUnavailable, ResourceError
from ishiki_host.resources.assets import DEFAULT_ASSET_MAX_BYTES
from ishiki_host.workers.wire import FrameError

if TYPE_CHECKING:
    from ishiki_host.channels.base import ChannelConnection
    from ishiki_host.jsontypes import Json
    from ishiki_host.resources import AssetFetchers
    from ishiki_host.runtime.outbound import Outlets

__all__ = ["channel_handlers"]

Handler = Callable[[dict[str, "Json"]], Awaitable["Json"]]


def channel_handlers(
    outlets: Outlets, fetchers: AssetFetchers, *, max_asset_bytes: int = DEFAULT_ASSET_MAX_BYTES
) -> dict[str, Handler]:
    """The handlers a supervisor serves each worker (see the module docstring)."""

    def live(params: Mapping[str, Json]) -> tuple[ChannelConnection, str]:
        sid = _text(params, "sid")
        connection = outlets.connection(sid)
        if connection is None:
            raise ChannelUnavailable(f"channel {sid} is not connected now")
        return connection, _text(params, "channel_id")

    def drafting(params: Mapping[str, Json]) -> tuple[DraftingConnection, str]:
        connection, channel_id = live(params)
        if not isinstance(connection, DraftingConnection):
            raise ChannelUnavailable(f"channel {params['sid']} shows no drafts now")
        return connection, channel_id

    async def send(params: dict[str, Json]) -> Json:
        connection, channel_id = live(params)
        reply_to = _optional_text(params, "reply_to")
        return result_json(await connection.send(channel_id, _text(params, "text"), reply_to=reply_to))

    async def typing(params: dict[str, Json]) -> Json:
        connection, channel_id = live(params)
        await connection.send_typing(channel_id)
        return None

    async def files(params: dict[str, Json]) -> Json:
        connection, channel_id = live(params)
        raw = params.get("files")
        if not isinstance(raw, list):
            raise FrameError("bad channel.files: files must be a list")
        return result_json(await connection.send_files(channel_id, [file_from(f) for f in raw]))

    async def show_draft(params: dict[str, Json]) -> Json:
        connection, channel_id = drafting(params)
        await connection.show_draft(channel_id, draft_from(params.get("draft")))
        return None

    async def finish_draft(params: dict[str, Json]) -> Json:
        connection, channel_id = drafting(params)
        draft = draft_from(params.get("draft"))
        return result_json(await connection.finish_draft(channel_id, draft, _text(params, "text")))

    async def drop_draft(params: dict[str, Json]) -> Json:
        connection, channel_id = drafting(params)
        why = params.get("why")
        if why not in ("tools", "failed", "aborted"):
            raise FrameError(f"bad channel.draft.drop: why {why!r}")
        await connection.drop_draft(channel_id, draft_from(params.get("draft")), cast("Any", why))
        return None

    async def activity(params: dict[str, Json]) -> Json:
        connection, channel_id = live(params)
        show = getattr(connection, "show_activity", None)
        if callable(show):
            show(channel_id, activity_from(params.get("activity")))
        return None

    async def failure(params: dict[str, Json]) -> Json:
        connection, channel_id = live(params)
        show = getattr(connection, "show_failure", None)
        if callable(show):
            show(channel_id, _text(params, "reason"))
        return None

    async def note_sent(params: dict[str, Json]) -> Json:
        ids = params.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise FrameError("bad channel.note_sent: ids must be a list of strings")
        outlets.note_sent(_text(params, "sid"), _text(params, "channel_id"), cast("list[str]", ids))
        return None

    async def fetch(params: dict[str, Json]) -> Json:
        kind = _text(params, "kind")
        locator = params.get("locator")
        if not isinstance(locator, dict):
            raise FrameError("bad asset.fetch: locator must be an object")
        fetcher = fetchers.get(kind)
        if fetcher is None:
            raise ResourceError("no_fetcher", f"no fetcher for {kind!r} assets is registered")
        return bytes_json(await _collected(await fetcher(locator), max_asset_bytes, kind))

    return {
        "channel.send": send,
        "channel.typing": typing,
        "channel.files": files,
        "channel.draft.show": show_draft,
        "channel.draft.finish": finish_draft,
        "channel.draft.drop": drop_draft,
        "channel.activity": activity,
        "channel.failure": failure,
        "channel.note_sent": note_sent,
        "asset.fetch": fetch,
    }


async def _collected(source: bytes | AsyncIterable[bytes], limit: int, kind: str) -> bytes:
    """All the bytes of a fetch, at most ``limit`` (the worker's asset store checks its own limit again)."""
    if isinstance(source, bytes):
        data = source
    else:
        parts = bytearray()
        async for chunk in source:
            parts += chunk
            if len(parts) > limit:
                break
        data = bytes(parts)
    if len(data) > limit:
        raise ResourceError("too_large", f"a {kind} asset is over {limit} bytes")
    return data


def _text(params: Mapping[str, Json], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise FrameError(f"bad request: {key!r} must be text, got {type(value).__name__}")
    return value


def _optional_text(params: Mapping[str, Json], key: str) -> str | None:
    return None if params.get(key) is None else _text(params, key)
