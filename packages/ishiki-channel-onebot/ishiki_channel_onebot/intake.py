"""What the channel does with an event frame: shape it, recognise a repeat or its own echo, dispatch, set aside.

For each frame, in order:

1. shaped (``shaping``); a frame that is no message or recall is done; a malformed one is set aside;
2. its key (``<kind>/<channel>/<message id>``) is in ``SeenEvents`` (taken before, restarts included), or it
   is a message this account sent: done, not dispatched (counted as ``repeats`` / ``own``);
3. dispatched: ``host.dispatch`` returns once the event is durable in the owning fact log, so the event is
   recorded before anything acts on it; then its key is remembered;
4. a dispatch that fails is retried with back-off (WebSocket modes) or answered "not yet" (HTTP mode: the
   implementation, or whatever posts for it, sends it again). ``EventRejected`` sets it aside at once; a
   ``ChannelError`` whose ``fatal`` is false (the host is stopping, its disk is full) is not counted; any
   other failure is counted, and the ``dispatch_tries``-th sets the event aside, so one poison event never
   holds back the others. Setting aside logs one line, counts it (``setAside``, ``lastSetAside``) and
   remembers the key.

Over a WebSocket the reader hands frames to ``submit`` and goes on reading (answers to actions must never
wait behind a dispatch, which may wait for a turn's step to end); a lane takes them in order. A slash command
the host answers at once (``/stop``) goes ahead of the plain messages still waiting (at most ``AHEAD`` at a
time). Two deliveries of one event at once (HTTP posts) never both dispatch: the second waits for the first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from ishiki_host import Backoff
from ishiki_host.errors import ChannelError, EventInvalid, EventRejected

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus
    from ishiki_host import ChannelHost, Json, RandomSource

    from ishiki_channel_onebot.config import OneBotAccount
    from ishiki_channel_onebot.seen import SeenEvents
    from ishiki_channel_onebot.shaping import Shaped, Shaper

__all__ = ["AHEAD", "QUEUED", "Intake"]

AHEAD = 4
"""How many commands may be dispatched at once, ahead of the plain messages."""

QUEUED = 256
"""Frames read but not yet taken; the reader waits beyond it (the link's flow control pushes back)."""


class _SetAside(Exception):
    def __init__(self, why: str, *, malformed: bool = False):
        super().__init__(why)
        self.why = why
        self.malformed = malformed


class Intake:
    """Takes the event frames of one running account (see the module docstring). ``own(channel, id)`` tells
    a message the account sent itself."""

    def __init__(
        self,
        host: ChannelHost,
        account: OneBotAccount,
        shaper: Shaper,
        seen: SeenEvents,
        rng: RandomSource,
        *,
        own: Callable[[str, str], bool],
    ):
        self._host = host
        self._account = account
        self._shaper = shaper
        self._seen = seen
        self._rng = rng
        self._own = own
        self._log = host.logger
        self._send, self._receive = anyio.create_memory_object_stream[dict[str, Any]](QUEUED)
        self._ahead = anyio.Semaphore(AHEAD)
        self._taking: dict[str, anyio.Event] = {}
        self._tries: dict[str, int] = {}
        self._in_hand = 0
        self._idle = anyio.Event()
        self._idle.set()
        self.counts = {"taken": 0, "repeats": 0, "own": 0, "setAside": 0}
        self.last_set_aside: dict[str, Json] | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The lane: take the submitted frames in order until cancelled."""
        async with anyio.create_task_group() as tg:
            with self._send, self._receive:
                await self._lane_forever(tg, task_status)

    async def _lane_forever(self, tg: TaskGroup, task_status: TaskStatus[None]) -> None:
        task_status.started()
        async for frame in self._receive:
            try:
                await self._lane(frame, tg)
            finally:
                self._done()

    async def submit(self, frame: dict[str, Any]) -> None:
        """Queue a frame a WebSocket brought (waits while ``QUEUED`` are in hand)."""
        self._in_hand += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        await self._send.send(frame)

    async def take(self, frame: dict[str, Any]) -> bool:
        """Take a frame an HTTP post brought, with one try: False when it must be delivered again."""
        try:
            shaped = await self._shape(frame)
        except _SetAside as aside:
            self._set_aside(frame, aside)
            return True
        try:
            return shaped is None or await self._take(shaped, frame, retry=False)
        finally:
            self._seen.settle()

    async def settled(self) -> None:
        """Return once every submitted frame is taken (at once when none is in hand)."""
        await self._idle.wait()

    def status(self) -> dict[str, Json]:
        """``taken``, ``repeats``, ``own``, ``setAside`` and ``lastSetAside``."""
        return {**self.counts, "lastSetAside": self.last_set_aside}

    async def _lane(self, frame: dict[str, Any], tg: TaskGroup) -> None:
        try:
            shaped = await self._shape(frame)
        except _SetAside as aside:
            self._set_aside(frame, aside)
            return
        if shaped is None:
            return
        if self._is_command(shaped):
            await self._ahead.acquire()
            self._in_hand += 1
            tg.start_soon(self._go_ahead, shaped, frame)
            return
        await self._take(shaped, frame, retry=True)

    async def _go_ahead(self, shaped: Shaped, frame: dict[str, Any]) -> None:
        try:
            await self._take(shaped, frame, retry=True)
        finally:
            self._ahead.release()
            self._done()

    def _done(self) -> None:
        self._in_hand -= 1
        if self._in_hand == 0:
            self._seen.settle()
            self._idle.set()

    def _is_command(self, shaped: Shaped) -> bool:
        event = shaped.event
        words = event.content.split(maxsplit=1)
        if event.kind != "message.created" or not words or not words[0].startswith("/"):
            return False
        return words[0][1:].lower() in self._host.command_names(event.channel_id)

    async def _shape(self, frame: dict[str, Any]) -> Shaped | None:
        try:
            return await self._shaper.shape(frame, self._host.clock.now())
        except EventInvalid as exc:
            raise _SetAside(f"malformed event: {exc}", malformed=True) from None

    async def _take(self, shaped: Shaped, frame: dict[str, Any], *, retry: bool) -> bool:
        key, event = shaped.key, shaped.event
        while (taking := self._taking.get(key)) is not None:
            await taking.wait()
        if key in self._seen:
            self.counts["repeats"] += 1
            self._log.debug("onebot: %s came again; not dispatched twice", key)
            return True
        if event.kind == "message.created" and self._own(event.channel_id, event.message_id):
            self.counts["own"] += 1
            return True
        done = self._taking[key] = anyio.Event()
        try:
            if not await self._dispatch(shaped, frame, retry=retry):
                return False
        finally:
            del self._taking[key]
            done.set()
        return True

    async def _dispatch(self, shaped: Shaped, frame: dict[str, Any], *, retry: bool) -> bool:
        backoff = Backoff(self._rng, maximum=self._account.backoff_max)
        while True:
            try:
                await self._host.dispatch(shaped.event, shaped.attachments)
                break
            except EventRejected as exc:
                self._set_aside(frame, _SetAside(f"the host rejected it ({exc})"), shaped.key)
                return True
            except Exception as exc:
                try:
                    self._failed(shaped.key, exc, retry=retry)
                except _SetAside as aside:
                    self._set_aside(frame, aside, shaped.key)
                    return True
                if not retry:
                    return False
                await self._host.clock.sleep(backoff.next_delay())
        self._tries.pop(shaped.key, None)
        self._seen.add(shaped.key)
        self.counts["taken"] += 1
        return True

    def _failed(self, key: str, exc: Exception, *, retry: bool) -> None:
        """Count a failed try (unless the host called it passing) and log it; ``_SetAside`` after the last."""
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ChannelError) and not exc.fatal:
            tries = "the host cannot take input for now"
        else:
            count = self._tries[key] = self._tries.get(key, 0) + 1
            if count >= self._account.dispatch_tries:
                raise _SetAside(f"{count} tries failed, the last with {error}")
            tries = f"try {count} of {self._account.dispatch_tries}"
        again = "retrying" if retry else "answered 503 so it is sent again"
        label = self._account.label
        self._log.error("onebot account %s: dispatching %s failed (%s), %s; %s", label, key, error, tries, again)

    def _set_aside(self, frame: dict[str, Any], aside: _SetAside, key: str | None = None) -> None:
        self.counts["setAside"] += 1
        self._tries.pop(key or "", None)
        if key is not None:
            self._seen.add(key)
        where = key or f"frame {str(frame)[:200]}"
        self.last_set_aside = {"updateId": key or "(malformed)", "why": aside.why}
        level = logging.WARNING if aside.malformed else logging.ERROR
        self._log.log(
            level, "onebot account %s: set aside %s: %s; the others go on", self._account.label, where, aside.why
        )
