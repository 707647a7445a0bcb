"""Helpers for tests that drive an ``Agent``: run it in a task group, and record what its bus says.

::

    async with running(agent):
        handle = await agent.continue_("hi")
        outcome = await handle
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from ishiki_host.core.agent import Agent
from ishiki_host.core.bus import BusEvent, EventBus

__all__ = ["BusRecorder", "running"]


@asynccontextmanager
async def running(agent: Agent, *, deadline: float = 30.0) -> AsyncIterator[Agent]:
    """Start ``agent.run`` in a task group, yield the agent, then stop it; all within ``deadline`` seconds."""
    with anyio.fail_after(deadline):
        async with anyio.create_task_group() as tg:
            await tg.start(agent.run)
            try:
                yield agent
            finally:
                await agent.stop()


class BusRecorder:
    """Records every event of a bus, in order."""

    def __init__(self, bus: EventBus):
        self.events: list[BusEvent] = []
        self.unsubscribe = bus.subscribe("*", self.events.append)

    @property
    def names(self) -> list[str]:
        """The names of the recorded events."""
        return [event.name for event in self.events]

    def named(self, name: str) -> list[BusEvent]:
        """The recorded events called ``name``."""
        return [event for event in self.events if event.name == name]
