"""The host's memory store: ``data/memory.db``, opened once per host and shared as ``services["memory"]``.

``Host`` opens it before its task group starts and closes it after the group has ended, so every task that
uses it (the heartbeat scheduler, runtimes' extensions) is gone first. A store that cannot be used (corrupt,
locked by another process, a newer schema) is logged with its hint and left closed: the host serves without
it, and what needs it (memory, heartbeats, some commands) says it is off. The host never deletes the file.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ishiki_host.errors import StoreError

if TYPE_CHECKING:
    from contextlib import AsyncExitStack
    from pathlib import Path

    from ishiki_host.core.clock import Clock
    from ishiki_host.memory.store import MemoryStore

__all__ = ["MEMORY_SERVICE", "open_memory_store"]

logger = logging.getLogger("ishiki_host.host")

MEMORY_SERVICE = "memory"
"""The key of the store in the host's ``services`` (``runtime.services["memory"]``)."""


async def open_memory_store(data_dir: Path, clock: Clock, stack: AsyncExitStack) -> MemoryStore | None:
    """Open ``data_dir/memory.db`` and have ``stack`` close it; ``None`` (logged) when it cannot be used."""
    from ishiki_host.memory.db import memory_db_path
    from ishiki_host.memory.store import MemoryStore

    try:
        store = await MemoryStore.open(memory_db_path(data_dir), clock=clock)
    except StoreError as exc:
        logger.error("%s; memory and heartbeats are off until it is fixed", exc)
        return None
    stack.push_async_callback(store.aclose)
    return store
