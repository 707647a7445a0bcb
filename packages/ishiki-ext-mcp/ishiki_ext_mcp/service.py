"""Service tasks: work that belongs to the host, not to the runtime that happened to start it.

A server shared by several runtimes must outlive the runtime that started it, so its supervisor cannot run
in that runtime's task group, and the plugin API gives extensions no host-level one. ``start_service``
uses the host's ``start_soon`` when one is given (a host can put ``MCPManager(start_soon=tg.start_soon)``
into ``services`` (``SERVICE``)); otherwise it starts an asyncio task on the running loop and keeps a strong
reference to it. That task is not orphaned: the manager stops it when the last runtime lets go of the
server, and when the event loop shuts down (``asyncio.run`` cancels what is left) the supervisor's
shielded cleanup still stops the server process.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import sniffio

__all__ = ["ServiceTask", "StartSoon", "start_service"]

StartSoon = Callable[..., Any]
"""A task group's ``start_soon``."""

logger = logging.getLogger("ishiki.ext.mcp")


class ServiceTask:
    """A running service function; ``done`` is set when it has returned (or failed, which is logged)."""

    def __init__(self, name: str, fn: Callable[[], Awaitable[None]]):
        self.name = name
        self.done = anyio.Event()
        self._fn = fn
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        """Run the function; an exception is logged, never raised into the host's loop."""
        try:
            await self._fn()
        except Exception:
            logger.exception("service %s failed", self.name)
        finally:
            self.done.set()


def start_service(name: str, fn: Callable[[], Awaitable[None]], start_soon: StartSoon | None = None) -> ServiceTask:
    """Start ``fn`` as a service task (in ``start_soon``'s task group, or on the running asyncio loop)."""
    service = ServiceTask(name, fn)
    if start_soon is not None:
        start_soon(service.run)
        return service
    library = sniffio.current_async_library()
    if library != "asyncio":
        raise RuntimeError(
            f"MCP servers need the asyncio event loop or a host task group (HostServices.spawn); running on {library}"
        )
    # A strong reference: the loop only keeps a weak one to its tasks.
    service._task = asyncio.get_running_loop().create_task(service.run(), name=f"ishiki-mcp:{name}")
    return service
