"""The ``memo`` extension of the crash harness: every finished turn writes one row into ``data/memory.db``.

The harness installs this module as ``ishiki_crash_plugins`` with a ``.dist-info`` of its own (a real entry
point of group ``ishiki.ext``), so the ``ishiki run`` processes it kills write to the memory database through
the host's own ``MemoryStore`` while they die; ``PRAGMA integrity_check`` is then run on what they left.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import anyio

from ishiki_host import Extension, hookimpl
from ishiki_host.store.memory_store import MemoryStore


class MemoInstance:
    """One runtime's memo: the store is opened at the first finished turn and closed when the runtime stops."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.store: MemoryStore | None = None
        self.lock = anyio.Lock()

    @hookimpl
    async def ishiki_turn_finished(self, runtime: Any, outcome: Any) -> None:
        async with self.lock:
            if self.store is None:
                self.store = await MemoryStore.open(runtime.data_dir / "memory.db", clock=runtime.clock)
            text = f"turn {outcome.turn} of {runtime.key} ended {outcome.status} ({outcome.reason})"
            await self.store.memories.add("fact", text, profile=runtime.profile.id, runtime_key=str(runtime.key))

    @hookimpl
    async def ishiki_stop(self, runtime: Any) -> None:
        async with self.lock:
            if self.store is not None:
                await self.store.aclose()
                self.store = None


class Memo(Extension):
    """Writes a memory row per finished turn (see the module docstring)."""

    config_schema: ClassVar[Mapping[str, Any]] = {"type": "object", "additionalProperties": False}

    def create(self, ctx: Any, config: Mapping[str, Any]) -> MemoInstance:
        """One instance per runtime."""
        return MemoInstance(ctx)
