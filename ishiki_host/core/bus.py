"""An in-process event bus: the agent tells observers what happened; observers never steer it.

``bus.subscribe(name, handler)`` (or ``"*"`` for every event) returns an unsubscribe function. ``await
bus.emit(name, **data)`` calls the handlers of ``name`` and of ``"*"`` in subscription order, awaiting async
ones. A handler that raises, or overruns ``handler_timeout``, is logged and skipped: it never stops the other
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
from typing import Any

import anyio

__all__ = ["BusEvent", "EventBus", "Handler"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BusEvent:
    """One emitted event: its name and its data."""

    name: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]


Handler = Callable[[BusEvent], Awaitable[None] | None]


class EventBus:
    """Fan-out of named events to sync or async handlers, in subscription order."""

    def __init__(self, *, handler_timeout: float | None = 60.0):
        self.handler_timeout = handler_timeout
        self._subscriptions: list[tuple[str, Handler]] = []
        self._routes: dict[str, tuple[Handler, ...]] = {}  # handlers per name; remade after a (un)subscribe

    def subscribe(self, name: str, handler: Handler) -> Callable[[], None]:
        """Call ``handler`` for events named ``name`` (``"*"``: every event). Returns the unsubscribe function."""
        subscription = (name, handler)
        self._subscriptions.append(subscription)
        self._routes.clear()

        def unsubscribe() -> None:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
                self._routes.clear()

        return unsubscribe

    async def emit(self, name: str, **data: Any) -> None:
        """Call every handler subscribed to ``name`` or ``"*"``, one after the other."""
        handlers = self._routes.get(name)
        if handlers is None:
            handlers = tuple(handler for wanted, handler in self._subscriptions if wanted in (name, "*"))
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
