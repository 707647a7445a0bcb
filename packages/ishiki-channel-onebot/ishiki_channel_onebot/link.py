"""One WebSocket link's life, the same in forward and reverse mode: read frames until the link closes or its
heartbeat stops, route each frame, and say why it ended.

A frame is JSON. An answer to an action (it has ``echo``, no ``post_type``) goes to the link's
``WsTransport``; a ``heartbeat`` meta-event tells the ``HeartbeatWatch`` the interval the implementation beats
at; a ``lifecycle`` meta-event is logged; every other frame is an event for the intake. A frame that is not a
JSON object is logged (the first of a link at warning level, the others at debug level), counted
(``malformed``), and the link goes on.

Heartbeats: once a heartbeat said its ``interval``, a link that brings no frame at all for
``heartbeat_misses`` intervals is taken for dead (a half-open TCP connection sends nothing and reports no
error) and closed; the connection then reconnects (forward) or waits for the implementation to (reverse).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from ishiki_host import Clock

    from ishiki_channel_onebot.actions import WsTransport

__all__ = ["FrameRouter", "HeartbeatWatch", "run_link"]


class HeartbeatWatch:
    """When a link last brought a frame, and the interval its heartbeats state (see the module docstring)."""

    def __init__(self, clock: Clock, misses: float):
        self._clock = clock
        self._misses = misses
        self.interval: float | None = None
        self.last = clock.monotonic()
        self.beats = 0
        self._known = anyio.Event()

    def saw_frame(self) -> None:
        """A frame arrived."""
        self.last = self._clock.monotonic()

    def beat(self, interval_ms: object) -> None:
        """A heartbeat meta-event arrived, stating its interval in milliseconds."""
        self.beats += 1
        if isinstance(interval_ms, int | float) and not isinstance(interval_ms, bool) and interval_ms > 0:
            self.interval = interval_ms / 1000
            self._known.set()

    async def known(self) -> None:
        """Return once a heartbeat stated its interval (the watch for silence runs from then on)."""
        await self._known.wait()

    async def dead(self) -> float:
        """Return, with the seconds of silence, once the link has been silent for too long."""
        while True:
            if self.interval is None:
                await self._known.wait()
                continue
            silent = self._clock.monotonic() - self.last
            allowed = self.interval * self._misses
            if silent >= allowed:
                return silent
            await self._clock.sleep(allowed - silent)


class FrameRouter:
    """Routes the frames of one link (see the module docstring); ``events(frame)`` takes the events."""

    def __init__(
        self,
        transport: WsTransport | None,
        watch: HeartbeatWatch,
        events: Callable[[dict[str, Any]], Awaitable[None]],
        logger: logging.Logger,
        label: str,
    ):
        self._transport = transport
        self._watch = watch
        self._events = events
        self._log = logger
        self._label = label
        self.malformed = 0

    async def route(self, raw: str | bytes) -> None:
        """Take one frame."""
        self._watch.saw_frame()
        try:
            frame = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            self._malformed(f"not JSON ({exc})", raw)
            return
        if not isinstance(frame, dict):
            self._malformed(f"a JSON {type(frame).__name__}, not an object", raw)
            return
        if "post_type" not in frame:
            if "echo" in frame and self._transport is not None and self._transport.answer(frame):
                return
            self._log.debug("onebot account %s: an answer nobody waits for (late?): %.200s", self._label, raw)
            return
        if frame["post_type"] == "meta_event":
            self._meta(frame)
            return
        await self._events(frame)

    def _meta(self, frame: dict[str, Any]) -> None:
        kind = frame.get("meta_event_type")
        if kind == "heartbeat":
            self._watch.beat(frame.get("interval"))
        elif kind == "lifecycle":
            self._log.info("onebot account %s: lifecycle %s", self._label, frame.get("sub_type"))

    def _malformed(self, why: str, raw: str | bytes) -> None:
        self.malformed += 1
        level = logging.WARNING if self.malformed == 1 else logging.DEBUG
        message = "onebot account %s: a frame is %s; skipped, the link goes on: %.120r"
        self._log.log(level, message, self._label, why, raw)


async def run_link(
    receive: Callable[[], Awaitable[str | bytes | None]],
    close: Callable[[], Awaitable[None]],
    router: FrameRouter,
    watch: HeartbeatWatch,
) -> str:
    """Read and route frames until the link closes or is silent too long; why it ended."""
    why = "the implementation closed the link"
    async with anyio.create_task_group() as tg:

        async def watchdog() -> None:
            nonlocal why
            silent = await watch.dead()
            why = f"no frame for {silent:.1f} s (heartbeats stopped)"
            tg.cancel_scope.cancel()

        tg.start_soon(watchdog)
        while (raw := await receive()) is not None:
            await router.route(raw)
        tg.cancel_scope.cancel()
    if why.startswith("no frame"):
        with anyio.CancelScope(shield=True):
            await close()
    return why
