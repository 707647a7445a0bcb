"""Where a host's runtimes run: the seam between routing an event and the runtime that takes it.

``Host.dispatch`` finds the route (the profile that claims the chat) and the runtime key in this process, then
hands the event to its ``RuntimePlacement``:

- ``LocalPlacement`` (one process, the default): the route's own runtime takes it (``ProfileRoute.deliver``).
- ``ishiki_host.workers`` (``ishiki run --workers N``): the worker process that owns the key takes it, over
  local IPC; the receipt it returns answers ``settled`` by asking that worker.

What a placement raises is what a route raises (``AgentStopped``, ``FactLogError``, ``RuntimeStartFailed``), so
``Host.dispatch`` tells a channel the same thing whichever placement took the event. The next step (several
hosts, issue 25) is another placement: the lease holder of a key, reached through PostgreSQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ishiki_host.host.delivery import RuntimeDelivery

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.channels.base import Delivery, InboundAttachment
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.host.routes import ProfileRoute

__all__ = ["LocalPlacement", "RuntimePlacement"]


class RuntimePlacement(Protocol):
    """Takes an event to the runtime at a key (see the module docstring)."""

    async def deliver(
        self, route: ProfileRoute, key: RuntimeKey, event: IshikiEvent, attachments: Sequence[InboundAttachment]
    ) -> Delivery:
        """Deliver ``event`` to the runtime at ``key`` of ``route``; returns once it is durable there."""
        ...


class LocalPlacement:
    """Every runtime in this process: the route spawns and feeds it."""

    async def deliver(
        self, route: ProfileRoute, key: RuntimeKey, event: IshikiEvent, attachments: Sequence[InboundAttachment]
    ) -> Delivery:
        """The route's runtime at ``key`` takes ``event`` (spawned from its fact log if needed)."""
        runtime, entry = await route.deliver(key, event, attachments)
        return RuntimeDelivery(runtime, entry)
