"""An in-process event bus: the agent tells observers what happened; observers never steer it.

``bus.subscribe(name, handler)`` (or ``"*"`` for every event) returns an unsubscribe function. ``await
bus.emit(name, **data)`` calls the handlers of ``name`` and of ``"*"``, awaiting async ones, phase by phase
(``PHASES``) and in subscription order within a phase:

- ``track``: the runtime's own bookkeeping of what happened (the running turn, the inbound messages a turn
  will answer), so that every later handler reads a state that already includes the event;
- ``react`` (the default, and the phase for plugins): engines and extensions deciding and observing;
- ``close``: the runtime's handling of a turn's end once everyone has reacted to it (the report to the
  extensions, the messages the turn never saw).

A handler that raises, or overruns ``handler_timeout``, is logged and skipped: it never stops the other
handlers or the emitter.

Events the agent emits (``BusEvent.data`` keys in brackets):

- ``turn.queued`` [handle, priority, prompt], ``turn.start`` [turn], ``turn.step`` [step],
  ``turn.done`` / ``turn.failed`` / ``turn.aborted`` [outcome];
- ``tool.start`` [call, step], ``tool.done`` [call, result, step], ``tool.failed`` [call, result, error, step],
  ``tool.blocked`` [call, reason, step];
- ``message.appended`` [entry, joined]: emitted once the entry is in the log. An entry a turn wrote is
  durable per the log's fsync policy by then; one sent while no turn ran (an inbound message) is announced
  as soon as it is written, with its fsync under way, so the decision it prompts overlaps the fsync. The
  sender gets it back durable, and a turn acts on a model's answer only once what came before the turn is
  durable. An observer with an outside effect that must wait for durability awaits
  ``log.sync(upto=entry.id)``. ``joined`` is true when the entry joined a running turn.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import anyio

__all__ = ["PHASES", "BusEvent", "BusPhase", "EventBus", "EventValue", "Handler"]

logger = logging.getLogger(__name__)


EventValue = Any
"""What an event carries under one key. Its type depends on the event and the key (a ``Turn`` under ``turn``, an
``Entry`` under ``entry``, a list of ids under ``ids``: the module docstring lists them): arbitrary, so ``Any``."""


@dataclass(frozen=True, slots=True)
class BusEvent:
    """One emitted event: its name and its data."""

    name: str
    data: Mapping[str, EventValue] = field(default_factory=dict)

    def __getitem__(self, key: str) -> EventValue:
        return self.data[key]


Handler = Callable[[BusEvent], Awaitable[None] | None]
BusPhase = Literal["track", "react", "close"]
PHASES: tuple[BusPhase, ...] = get_args(BusPhase)
"""The phases of an emit, in the order their handlers are called (see the module docstring)."""
_ORDER = {phase: index for index, phase in enumerate(PHASES)}


class EventBus:
    """Fan-out of named events to sync or async handlers, by phase, then in subscription order."""

    def __init__(self, *, handler_timeout: float | None = 60.0):
        self.handler_timeout = handler_timeout
        self._subscriptions: list[tuple[str, Handler, BusPhase]] = []
        self._routes: dict[str, tuple[Handler, ...]] = {}  # handlers per name; remade after a (un)subscribe

    def subscribe(self, name: str, handler: Handler, *, phase: BusPhase = "react") -> Callable[[], None]:
        """Call ``handler`` for events named ``name`` (``"*"``: every event) in ``phase``. Returns the
        unsubscribe function."""
        if phase not in _ORDER:
            raise ValueError(f"bus phase must be one of {', '.join(PHASES)}; got {phase!r}")
        subscription = (name, handler, phase)
        self._subscriptions.append(subscription)
        self._routes.clear()

        def unsubscribe() -> None:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
                self._routes.clear()

        return unsubscribe

    async def emit(self, name: str, **data: EventValue) -> None:
        """Call every handler subscribed to ``name`` or ``"*"``, one after the other."""
        handlers = self._routes.get(name)
        if handlers is None:
            wanted = sorted(
                (_ORDER[phase], index, handler)
                for index, (of, handler, phase) in enumerate(self._subscriptions)
                if of in (name, "*")
            )
            handlers = tuple(handler for _, _, handler in wanted)
            self._routes[name] = handlers
        if not handlers:
            return  # most events of a turn have no observer
        event = BusEvent(name, data)
        for handler in handlers:  # those subscribed when the emit began
            await self._call(handler, event)

    async def _call(self, handler: Handler, event: BusEvent) -> None:
        try:
            result = handler(event)
        except Exception:
            logger.exception("event handler %r failed on %s", handler, event.name)
            return
        if not inspect.isawaitable(result):
            return  # a sync handler is done: no deadline to keep (events are frequent; cancel scopes are not free)
        with anyio.move_on_after(self.handler_timeout) as scope:
            try:
                await result
            except Exception:
                logger.exception("event handler %r failed on %s", handler, event.name)
        if scope.cancelled_caught:
            logger.error("event handler %r overran %ss on %s", handler, self.handler_timeout, event.name)
