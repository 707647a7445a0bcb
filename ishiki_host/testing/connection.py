"""Running a channel connection inside a test: start it in a task group, wait for readiness, cancel it at the end
(the channel packages' test kits hand it out as their ``running``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from ishiki_host.channels.base import ChannelConnection

__all__ = ["running_connection"]


@contextlib.asynccontextmanager
async def running_connection(connection: ChannelConnection) -> AsyncIterator[anyio.CancelScope]:
    """Run ``connection`` until the block ends; yields the cancel scope of its task (cancel it to "crash" it).

    Its readiness is awaited first, so an error at start (a refused token) raises here; an error the connection
    raises later comes out of the block as itself, not wrapped in an exception group.
    """
    scope = anyio.CancelScope()

    async def run(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with scope:
            await connection.run(task_status=task_status)

    try:
        async with anyio.create_task_group() as tg:
            await tg.start(run)
            try:
                yield scope
            finally:
                tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
