"""The receipts ``ChannelHost.dispatch`` returns (the ``Delivery`` protocol of ``channels.base``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.runtime.runtime import AgentRuntime

__all__ = ["RuntimeDelivery", "Unrouted"]


class RuntimeDelivery:
    """The event is durable in ``runtime``'s fact log (``entry`` is ``None`` when an inbound filter took it, or
    when it repeats an event the runtime took before)."""

    def __init__(self, runtime: AgentRuntime, entry: Entry | None):
        self.runtime = runtime
        self.entry = entry

    @property
    def routed(self) -> bool:
        """Always true."""
        return True

    @property
    def runtime_key(self) -> str | None:
        """The key of the runtime that took the event."""
        return str(self.runtime.key)

    @property
    def entry_id(self) -> int | None:
        """The fact-log id of the entry."""
        return self.entry.id if self.entry is not None else None

    async def settled(self) -> None:
        """Until the runtime has no running or queued turn (wrap it in a deadline)."""
        await self.runtime.settled()

    def __repr__(self) -> str:
        return f"<RuntimeDelivery {self.runtime.key} entry={self.entry_id}>"


class Unrouted:
    """Nobody took the event: no active profile claims its channel, or it echoes the host's own message."""

    def __init__(self, reason: str):
        self.reason = reason

    @property
    def routed(self) -> bool:
        """Always false."""
        return False

    @property
    def runtime_key(self) -> str | None:
        """None."""
        return None

    @property
    def entry_id(self) -> int | None:
        """None."""
        return None

    async def settled(self) -> None:
        """Returns at once: nothing runs for this event."""

    def __repr__(self) -> str:
        return f"<Unrouted {self.reason}>"
