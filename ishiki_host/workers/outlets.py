"""A worker's side of the channels: the supervisor's live connections, reached over the worker's link.

``RemoteOutlets`` is a worker's ``Outlets`` (what its runtimes send through). The supervisor tells it which
connections are up (``channel`` messages: the sid, the platform, the self id and what the connection can do
beyond the contract: show drafts, a thinking line, a failure mark); ``connection(sid)`` then gives a
``RemoteConnection`` whose every call is a request to the supervisor, which makes it on the real connection.
A connection that shows drafts gets a proxy that shows them too (``DraftingConnection`` is checked by
``isinstance``), one with ``show_activity`` or ``show_failure`` a proxy with that method, so a runtime on a
worker treats each connection exactly as it would in one process.

A call whose link goes while it waits never returns: the worker ends at once then, as a crash would, and the
call's outcome is unknown (``_call_or_wait_for_the_end``).

The calls a runtime makes without awaiting (``note_sent``, ``show_activity``, ``show_failure``) are queued
in order and sent by one task (``OneWay``); beyond ``ONE_WAY_LIMIT`` queued a thinking-line update is dropped
(the next one replaces it anyway) and the others wait their turn in the queue's overflow.

``RemoteFetchers`` are a worker's asset fetchers: a lazily captured attachment is downloaded by the
supervisor's fetcher of its kind, and its bytes come back over the link.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.channels.base import Draft, DraftEnd, DraftingConnection, OutboundFile, SendResult, TurnActivity
from ishiki_host.channels.codec import activity_json, bytes_from, draft_json, file_json, result_from
from ishiki_host.resources import AssetFetchers
from ishiki_host.workers.peer import Peer, PeerClosed

if TYPE_CHECKING:
    from collections.abc import Mapping

    from anyio.abc import TaskStatus

    from ishiki_host.channels.base import ChannelConnection
    from ishiki_host.jsontypes import Json
    from ishiki_host.resources import AssetFetcher, ByteSource

__all__ = ["ONE_WAY_LIMIT", "ChannelInfo", "OneWay", "RemoteConnection", "RemoteFetchers", "RemoteOutlets"]

logger = logging.getLogger(__name__)

ONE_WAY_LIMIT = 1024


class OneWay:
    """Messages to the supervisor that nobody waits for, sent in order by ``run`` (see the module docstring)."""

    def __init__(self, peer: Peer):
        self._peer = peer
        self._queue: deque[tuple[str, dict[str, Json]]] = deque()
        self._ready = anyio.Event()

    def send(self, method: str, params: dict[str, Json], *, droppable: bool = False) -> None:
        """Queue ``method(params)``; a ``droppable`` one is dropped when the queue is full."""
        if droppable and len(self._queue) >= ONE_WAY_LIMIT:
            return
        self._queue.append((method, params))
        self._ready.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Send what is queued until cancelled (or the link is gone)."""
        task_status.started()
        while True:
            await self._ready.wait()
            self._ready = anyio.Event()
            while self._queue:
                method, params = self._queue.popleft()
                if self._peer.closed:
                    self._queue.clear()
                    break
                try:
                    await self._peer.notify(method, params)
                except Exception as exc:  # the link went away: what the runtime did not wait for is lost with it
                    logger.debug("one-way %s to the supervisor not sent: %s", method, exc)


class ChannelInfo:
    """What a worker knows of one of the supervisor's connections."""

    def __init__(self, sid: str, platform: str, self_id: str, abilities: Sequence[str]):
        self.sid = sid
        self.platform = platform
        self.self_id = self_id
        self.abilities = frozenset(abilities)

    @classmethod
    def of(cls, sid: str, connection: ChannelConnection) -> ChannelInfo:
        """The info of a live connection (on the supervisor's side)."""
        abilities = [name for name in ("show_activity", "show_failure") if callable(getattr(connection, name, None))]
        if isinstance(connection, DraftingConnection):
            abilities.append("drafts")
        return cls(sid, connection.platform, connection.self_id, abilities)

    def to_json(self) -> dict[str, Json]:
        """The ``channel`` message's form."""
        abilities: list[Json] = sorted(self.abilities)
        return {"sid": self.sid, "platform": self.platform, "self_id": self.self_id, "abilities": abilities}


class RemoteConnection:
    """One of the supervisor's connections, as a worker's runtimes see it (see the module docstring)."""

    def __init__(self, info: ChannelInfo, peer: Peer, one_way: OneWay):
        self._info = info
        self._peer = peer
        self._one_way = one_way

    @property
    def platform(self) -> str:
        """The platform of the supervisor's connection."""
        return self._info.platform

    @property
    def self_id(self) -> str:
        """Its self id."""
        return self._info.self_id

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        """Never run on a worker: the supervisor runs the real connection."""
        raise RuntimeError(f"{self._info.sid} runs on the supervisor, not on a worker")

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Send through the supervisor's connection."""
        result = await self._call("send", {"channel_id": channel_id, "text": text, "reply_to": reply_to})
        return result_from(result)

    async def send_typing(self, channel_id: str) -> None:
        """Show the typing indicator through the supervisor's connection."""
        await self._call("typing", {"channel_id": channel_id})

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Send files through the supervisor's connection (their bytes cross the link)."""
        result = await self._call("files", {"channel_id": channel_id, "files": [file_json(f) for f in files]})
        return result_from(result)

    async def _call(self, method: str, params: dict[str, Json]) -> Json:
        return await _call_or_wait_for_the_end(self._peer, f"channel.{method}", {"sid": self._info.sid, **params})

    def _tell(self, method: str, params: dict[str, Json], *, droppable: bool = False) -> None:
        self._one_way.send(f"channel.{method}", {"sid": self._info.sid, **params}, droppable=droppable)

    def __repr__(self) -> str:
        return f"<RemoteConnection {self._info.sid}>"


class _Drafts:
    async def show_draft(self: Any, channel_id: str, draft: Draft) -> None:
        """Show a draft through the supervisor's connection."""
        await self._call("draft.show", {"channel_id": channel_id, "draft": draft_json(draft)})

    async def finish_draft(self: Any, channel_id: str, draft: Draft, text: str) -> SendResult:
        """Deliver a draft's final text through the supervisor's connection."""
        result = await self._call("draft.finish", {"channel_id": channel_id, "draft": draft_json(draft), "text": text})
        return result_from(result)

    async def drop_draft(self: Any, channel_id: str, draft: Draft, why: DraftEnd) -> None:
        """Take a draft back through the supervisor's connection."""
        await self._call("draft.drop", {"channel_id": channel_id, "draft": draft_json(draft), "why": why})


class _Activity:
    def show_activity(self: Any, channel_id: str, activity: TurnActivity) -> None:
        """Queue a thinking-line update (dropped when the queue is full: the next one replaces it)."""
        self._tell("activity", {"channel_id": channel_id, "activity": activity_json(activity)}, droppable=True)


class _Failure:
    def show_failure(self: Any, channel_id: str, reason: str) -> None:
        """Queue the failure mark of a turn."""
        self._tell("failure", {"channel_id": channel_id, "reason": reason})


_MIXINS: dict[str, type] = {"drafts": _Drafts, "show_activity": _Activity, "show_failure": _Failure}
_CLASSES: dict[frozenset[str], type[RemoteConnection]] = {}


def _connection_class(abilities: frozenset[str]) -> type[RemoteConnection]:
    """The proxy class with exactly the optional methods of ``abilities`` (one class per set, made once)."""
    known = frozenset(a for a in abilities if a in _MIXINS)
    made = _CLASSES.get(known)
    if made is None:
        bases = tuple(_MIXINS[name] for name in sorted(known))
        made = type(f"RemoteConnection[{','.join(sorted(known))}]", (*bases, RemoteConnection), {})
        _CLASSES[known] = made
    return made


class RemoteOutlets:
    """A worker's ``Outlets`` (see the module docstring)."""

    def __init__(self, peer: Peer):
        self._peer = peer
        self.one_way = OneWay(peer)
        self._connections: dict[str, RemoteConnection] = {}

    def connection(self, sid: str) -> ChannelConnection | None:
        """The proxy of the supervisor's connection of ``sid``, while it is up."""
        return self._connections.get(sid)

    def sids(self) -> tuple[str, ...]:
        """The sids whose connection is up."""
        return tuple(sorted(self._connections))

    def note_sent(self, sid: str, channel_id: str, ids: Sequence[str]) -> None:
        """Tell the supervisor the ids sent, so their echoes are dropped there."""
        self.one_way.send("channel.note_sent", {"sid": sid, "channel_id": channel_id, "ids": list(ids)})

    def up(self, info: ChannelInfo) -> None:
        """The supervisor's connection of ``info.sid`` is up (replacing any older one)."""
        self._connections[info.sid] = _connection_class(info.abilities)(info, self._peer, self.one_way)

    def down(self, sid: str) -> None:
        """The supervisor's connection of ``sid`` ended."""
        self._connections.pop(sid, None)

    def replace_all(self, infos: Sequence[ChannelInfo]) -> None:
        """Exactly these connections are up (a worker's first picture, or one after the link came back)."""
        self._connections.clear()
        for info in infos:
            self.up(info)


class RemoteFetchers(AssetFetchers):
    """A worker's asset fetchers: each kind fetched by the supervisor's fetcher (see the module docstring)."""

    def __init__(self, peer: Peer):
        super().__init__()
        self._peer = peer

    def get(self, kind: str) -> AssetFetcher | None:
        """A fetcher registered here, else one that asks the supervisor's fetcher of ``kind``."""
        local = super().get(kind)
        if local is not None:
            return local

        async def fetch(locator: Mapping[str, Any]) -> ByteSource:
            params: dict[str, Json] = {"kind": kind, "locator": dict(locator)}
            return bytes_from(await _call_or_wait_for_the_end(self._peer, "asset.fetch", params))

        return fetch


async def _call_or_wait_for_the_end(peer: Peer, method: str, params: dict[str, Json]) -> Json:
    """``peer.call``; when the link is gone, never return: the worker is ending at once, as a crash would
    (``ishiki_host.workers.worker``), and what the call did is unknown. Raising would have the runtime record a
    send cut in flight as failed, and a resumed turn would send it again; left without an answer, the call is
    recovered at the next start as "interrupted", as after a SIGKILL."""
    try:
        return await peer.call(method, params)
    except PeerClosed:
        await anyio.sleep_forever()
        raise  # pragma: no cover - sleep_forever only ends by cancellation
