"""``HostRuntimes``: a host's runtimes as plugins reach them (``HostServices.runtimes``), by their context."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host.host.host import Host
    from ishiki_host.plugins.runtime_api import RuntimeContext

__all__ = ["HostRuntimes"]


class HostRuntimes:
    """The ``RuntimeDirectory`` of a host: the ``RuntimeContext`` of a profile's runtime at a chat."""

    def __init__(self, host: Host):
        self._host = host

    async def runtime_for(
        self, profile_id: str, sid: str | None = None, channel_id: str | None = None
    ) -> RuntimeContext:
        """The runtime of a profile at a chat, spawned if needed (see ``Host.runtime_for``)."""
        return (await self._host.runtime_for(profile_id, sid, channel_id)).context
