"""What host plugins in the supervisor read of the runtimes in the workers: their fact logs and tools, answered by
the worker that owns the key, over its link (``RuntimeViews`` of ``ishiki_host.host.runtimeviews``).

Over the link rather than from the fact-log files: the owning worker holds the log open, with its cache and its
"appended" event, so a read costs what the window holds and a wait is woken by the append itself, never by
polling a file; and a runtime is "alive" by the one meaning the worker has (``live_runtime``). The worker serves:

- ``log.open`` (key): ``{"life", "last"}`` of the live runtime, ``None`` when it does not run there. ``life``
  names this life of the runtime (a runtime that stops and starts again is another), so a view never reads
  on into the next one unknowingly.
- ``log.read`` (key, life, ``before`` or ``after``, limit): the entries, oldest first, as their JSONL lines (at
  most ``MAX_READ``); ``FactLogError`` once that life has stopped.
- ``log.wait`` (key, life, after, seconds): once the log holds an entry newer than ``after``, or that life has
  stopped, or ``seconds`` (real time) have passed: ``{"last", "closed"}``.
- ``tools`` (key): the runtime's tool surface as plain data (name, description, parameters, trust, kind),
  ``None`` when it does not run there.

In the supervisor, ``WorkerViews.log`` opens a ``WorkerLogView``. Waits are shared: however many views wait on
one life of a runtime (browser tabs), one ``log.wait`` per life is in flight, re-asked while anyone waits, so a
worker holds one request slot per followed runtime, not one per reader, and a reader that goes away leaves at
most one wait of ``WAIT_SECONDS`` behind (a link has no way to cancel a request). A worker that dies closes its
views (their reads raise ``FactLogError``); the plugin asks again for the runtime that takes its place.
"""

from __future__ import annotations

import itertools
import logging
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, cast

import anyio

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.core.entries import Entry
from ishiki_host.core.tools import Tool
from ishiki_host.errors import FactLogError, IshikiError, ToolError
from ishiki_host.host.runtimeviews import live_runtime
from ishiki_host.plugins.logview import entries_after, entries_before
from ishiki_host.workers.peer import PeerClosed
from ishiki_host.workers.wire import FrameError

if TYPE_CHECKING:
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.tools import ToolContext, TrustLevel
    from ishiki_host.host.host import Host
    from ishiki_host.jsontypes import Json
    from ishiki_host.workers.peer import Handler, Peer

__all__ = [
    "MAX_READ",
    "WAIT_SECONDS",
    "LogViewService",
    "WorkerLogView",
    "WorkerViews",
    "key_from",
    "tool_from",
    "tool_json",
]

logger = logging.getLogger("ishiki_host.workers")

MAX_READ = 1000
"""The most entries one ``log.read`` answers (a frame stays far below ``MAX_FRAME``)."""
WAIT_SECONDS = 20.0
"""How long one ``log.wait`` waits before it answers "nothing new" and is asked again (while anyone waits)."""
_TRUST = ("untrusted", "trusted", "owner")
_KINDS = ("action", "send", "control")


# -- the worker's side --------------------------------------------------------------------------------------


class LogViewService:
    """The worker's handlers of ``log.*`` and ``tools`` (see the module docstring); ``host()`` waits for the
    worker's host to have started."""

    def __init__(self, host: Callable[[], Awaitable[Host]]):
        self._host = host
        self._lives: weakref.WeakKeyDictionary[FactLogProtocol, int] = weakref.WeakKeyDictionary()
        self._numbers = itertools.count(1)

    def handlers(self) -> dict[str, Handler]:
        """The handlers by method name."""
        return {"log.open": self.open, "log.read": self.read, "log.wait": self.wait, "tools": self.tools}

    async def open(self, params: dict[str, Json]) -> Json:
        """``{"life", "last"}`` of the live runtime at the key, or ``None``."""
        runtime = live_runtime(await self._host(), key_from(params))
        if runtime is None:
            return None
        log = runtime.context.log
        life = self._lives.get(log)
        if life is None:
            life = self._lives[log] = next(self._numbers)
        return {"life": life, "last": log.last_id}

    async def read(self, params: dict[str, Json]) -> Json:
        """``{"entries": [line, ...]}``: a window below ``before``, or the entries after ``after``."""
        key = key_from(params)
        log = await self._log(key, params)
        if log is None:
            raise FactLogError(f"the runtime {key} stopped")
        limit = max(1, min(_integer(params, "limit"), MAX_READ))
        if params.get("after") is not None:
            entries = await log.read_back(entries_after(_integer(params, "after"), limit))
        else:
            before = None if params.get("before") is None else _integer(params, "before")
            entries = await log.read_back(entries_before(before, limit))
        return {"entries": [entry.to_json() for entry in entries]}

    async def wait(self, params: dict[str, Json]) -> Json:
        """``{"last", "closed"}`` once there is something newer than ``after``, the life stopped, or time ran out."""
        key = key_from(params)
        log = await self._log(key, params)
        if log is None:
            return {"last": 0, "closed": True}
        seconds = params.get("seconds")
        limit = float(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool) else WAIT_SECONDS
        with anyio.move_on_after(min(max(limit, 0.0), WAIT_SECONDS)):
            await log.wait_appended(_integer(params, "after"))
        return {"last": log.last_id, "closed": await self._log(key, params) is not log}

    async def tools(self, params: dict[str, Json]) -> Json:
        """The live runtime's tool surface as plain data, or ``None``."""
        runtime = live_runtime(await self._host(), key_from(params))
        return None if runtime is None else [tool_json(tool) for tool in await runtime.tool_surface()]

    async def _log(self, key: RuntimeKey, params: dict[str, Json]) -> FactLogProtocol | None:
        """The open log of the life ``params["life"]`` of the runtime at ``key``, ``None`` once it stopped."""
        runtime = live_runtime(await self._host(), key)
        log = runtime.context.log if runtime is not None else None
        return log if log is not None and self._lives.get(log) == _integer(params, "life") else None


def key_from(params: dict[str, Json]) -> RuntimeKey:
    """The runtime key of a request's ``key`` (``FrameError`` when it is none)."""
    text = params.get("key")
    key = RuntimeKey.parse(text) if isinstance(text, str) else None
    if key is None:
        raise FrameError(f"bad request: {text!r} is not a runtime key")
    return key


def _integer(params: dict[str, Json], name: str) -> int:
    value = params.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise FrameError(f"bad request: {name} must be a whole number, not {value!r}")
    return value


def tool_json(tool: Tool) -> dict[str, Json]:
    """What a supervisor shows of ``tool``: all but its handler."""
    return {
        "name": tool.name,
        "description": tool.description,
        "parameters": dict(tool.parameters),
        "trust": tool.trust,
        "kind": tool.kind,
    }


def tool_from(data: object, key: RuntimeKey) -> Tool:
    """A tool of the runtime ``key`` as its worker described it; calling it raises ``ToolError``."""
    if not isinstance(data, dict):
        raise FrameError("bad tools: each tool must be an object")
    name, description, parameters = data.get("name"), data.get("description"), data.get("parameters")
    trust, kind = data.get("trust"), data.get("kind")
    if not (isinstance(name, str) and isinstance(description, str) and isinstance(parameters, dict)):
        raise FrameError("bad tools: name and description must be text, parameters an object")
    if trust not in _TRUST or kind not in _KINDS:
        raise FrameError(f"bad tools: {name} has trust {trust!r} and kind {kind!r}")

    async def elsewhere(arguments: object, context: ToolContext) -> Json:
        raise ToolError(f"{name} runs in the turns of {key}, in its worker; it cannot be called from here")

    return Tool(name, description, elsewhere, parameters, cast("TrustLevel", trust), kind)


# -- the supervisor's side ----------------------------------------------------------------------------------


class _Follow:
    """What the supervisor knows of one life's appends: the newest id (``None`` until the worker said) and
    whether it stopped; ``changed`` is set (and replaced) at each answer."""

    def __init__(self) -> None:
        self.last: int | None = None
        self.closed = False
        self.waiters = 0
        self.changed = anyio.Event()

    def note(self, last: int, closed: bool) -> None:
        self.last = max(last, self.last or 0)
        self.closed = self.closed or closed
        changed, self.changed = self.changed, anyio.Event()
        changed.set()


_Life = tuple["Peer", str, int]


class WorkerViews:
    """``RuntimeViews`` of the supervisor (see the module docstring): ``peer(key)`` is the link of the worker
    that owns ``key`` while it is ready (else ``None``: the runtime is not running), ``spawn(fn, name)`` runs a
    background task of the host's."""

    def __init__(
        self,
        peer: Callable[[RuntimeKey], Peer | None],
        spawn: Callable[[Callable[[], Awaitable[object]], str], None],
    ):
        self._peer = peer
        self._spawn = spawn
        self._follows: dict[_Life, _Follow] = {}

    async def log(self, key: RuntimeKey) -> WorkerLogView | None:
        """A view of the live runtime's log in its worker, or ``None`` (not running, or its worker is down)."""
        peer = self._peer(key)
        if peer is None:
            return None
        try:
            opened = await peer.call("log.open", {"key": str(key)})
        except PeerClosed:
            return None
        if opened is None:
            return None
        if not isinstance(opened, dict) or not isinstance(opened.get("life"), int):
            raise FrameError(f"bad log.open answer: {opened!r}")
        return WorkerLogView(self, peer, key, int(cast("int", opened["life"])))

    async def tools(self, key: RuntimeKey) -> Sequence[Tool] | None:
        """The tool surface the owning worker lists, or ``None``."""
        peer = self._peer(key)
        if peer is None:
            return None
        try:
            listed = await peer.call("tools", {"key": str(key)})
        except PeerClosed:
            return None
        if listed is None:
            return None
        if not isinstance(listed, list):
            raise FrameError(f"bad tools answer: {listed!r}")
        return [tool_from(item, key) for item in listed]

    async def wait(self, life: _Life, after: int) -> bool:
        """Until that life has an entry newer than ``after``, or has stopped; whether it stopped."""
        follow = self._follows.get(life)
        if follow is None:
            follow = self._follows[life] = _Follow()
            try:
                self._spawn(lambda: self._poll(life, follow), f"following the log of {life[1]}")
            except RuntimeError:  # the host's task group has closed: nothing follows any more
                del self._follows[life]
                return True
        follow.waiters += 1
        try:
            while not follow.closed and (follow.last is None or follow.last <= after):
                await follow.changed.wait()
        finally:
            follow.waiters -= 1
        return follow.closed

    async def _poll(self, life: _Life, follow: _Follow) -> None:
        """Ask the worker again while anyone waits on ``follow`` (one request in flight per life)."""
        peer, key, number = life
        try:
            while follow.waiters and not follow.closed:
                after = -1 if follow.last is None else follow.last  # the first answer says where the log is
                params: dict[str, Json] = {"key": key, "life": number, "after": after, "seconds": WAIT_SECONDS}
                answer = await peer.call("log.wait", params)
                if not isinstance(answer, dict) or not isinstance(answer.get("last"), int):
                    raise FrameError(f"bad log.wait answer: {answer!r}")
                follow.note(int(cast("int", answer["last"])), answer.get("closed") is True)
        except IshikiError as exc:  # the link went, or the worker could not answer: the view is closed
            logger.debug("following the log of %s ended: %s", key, exc)
            follow.note(follow.last or 0, True)
        finally:
            if self._follows.get(life) is follow:
                del self._follows[life]


class WorkerLogView:
    """A ``RuntimeLogView`` of one life of a runtime in a worker, read over its link."""

    def __init__(self, views: WorkerViews, peer: Peer, key: RuntimeKey, life: int):
        self._views = views
        self._peer = peer
        self._key = key
        self._life = life
        self._closed = False

    @property
    def key(self) -> RuntimeKey:
        """The runtime's address."""
        return self._key

    @property
    def closed(self) -> bool:
        """Whether the runtime stopped (or its worker went), as the last read or wait learnt."""
        return self._closed or self._peer.closed

    async def window(self, *, before: int | None = None, limit: int) -> list[Entry]:
        """The newest ``limit`` entries below ``before`` (all when ``None``), oldest first."""
        return await self._read({"before": before, "limit": limit})

    async def since(self, after: int, *, limit: int) -> list[Entry]:
        """The entries newer than ``after`` (the newest ``limit`` of them), oldest first."""
        return await self._read({"after": after, "limit": limit})

    async def wait_appended(self, after: int) -> None:
        """Until the log holds an entry newer than ``after``, or the runtime stopped."""
        if not self.closed and await self._views.wait((self._peer, str(self._key), self._life), after):
            self._closed = True

    async def _read(self, window: dict[str, Json]) -> list[Entry]:
        try:
            answer = await self._peer.call("log.read", {"key": str(self._key), "life": self._life, **window})
        except PeerClosed as exc:
            self._closed = True
            raise FactLogError(f"the worker of {self._key} is gone") from exc
        except FactLogError:
            self._closed = True
            raise
        lines = answer.get("entries") if isinstance(answer, dict) else None
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            raise FrameError(f"bad log.read answer for {self._key}")
        try:
            return [Entry.from_json(cast("str", line)) for line in lines]
        except (ValueError, KeyError, TypeError) as exc:
            raise FrameError(f"bad log.read answer for {self._key}: {exc}") from exc
