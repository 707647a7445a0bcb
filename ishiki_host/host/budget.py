"""``RuntimeBudget``: how many runtimes live at once in this process, and who makes room for a new one.

Every live runtime holds its fact log open (``ishiki_host.host.openfiles``) while it is not cooled, so the
open-files limit bounds the live chats of a process. A cooled runtime has closed its file (``FactLog.park``), but
its next input opens it again without asking for room, so the budget still counts it: what parking buys is
headroom for sockets and attachments while chats are idle, not more live runtimes. The budget counts the
runtimes that hold their files (from the moment one starts to open them until it has closed them), across every
profile route of the host. When a new runtime would go over
``room``, the least recently used idle runtimes are stopped first, a batch at a time (a runtime stopped this
way respawns from its fact log at its next input: nothing is lost, the next turn only reads its window from
the file), and the newcomer waits until they have closed their files. Busy runtimes are never stopped for
room: when none is idle the newcomer goes over, and if its start then fails for want of files, the budget
takes the count it had as the real room, makes room and the start is tried once more (``start_failed``).

``room`` is the soft limit, less what the host had open when it started, less a reserve for sockets and
passing files (a quarter of the limit, and at least 64, or half the limit below 128), over ``FILES_PER_RUNTIME``.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import anyio

from ishiki_host.host.openfiles import FILES_PER_RUNTIME, files_exhausted, open_files, soft_limit

if TYPE_CHECKING:
    from ishiki_host.runtime.runtime import AgentRuntime

__all__ = ["Evict", "RuntimeBudget", "room_under"]

logger = logging.getLogger(__name__)

Evict = Callable[["AgentRuntime"], bool]
"""Stop an idle runtime to make room (its route's ``evict``); whether it was still the route's to stop."""


def room_under(limit: int, in_use: int) -> int:
    """How many runtimes fit under an open-files ``limit`` with ``in_use`` files already open (at least 1)."""
    reserve = max(limit // 4, min(64, limit // 2))
    return max(1, (limit - in_use - reserve) // FILES_PER_RUNTIME)


class RuntimeBudget:
    """The live runtimes of a process against its room (see the module docstring)."""

    def __init__(self, room: int | None):
        self.room = room
        self.evicted = 0
        self._held: set[AgentRuntime] = set()
        self._sources: list[Callable[[], Iterable[tuple[AgentRuntime, Evict]]]] = []
        self._leaving: set[AgentRuntime] = set()
        self._changed = anyio.Event()
        self._warned = False

    @classmethod
    def for_this_process(cls) -> RuntimeBudget:
        """The budget under this process's open-files limit, with what is open now counted as in use."""
        in_use = open_files()
        return cls(room_under(soft_limit(), in_use if in_use is not None else 64))

    def add_source(self, runtimes: Callable[[], Iterable[tuple[AgentRuntime, Evict]]]) -> Callable[[], None]:
        """Let the budget stop the idle runtimes ``runtimes()`` lists (a route's); returns the removal."""
        self._sources.append(runtimes)

        def remove() -> None:
            if runtimes in self._sources:
                self._sources.remove(runtimes)

        return remove

    @property
    def held(self) -> int:
        """Runtimes counted: from ``admit`` until ``released``."""
        return len(self._held)

    @property
    def leaving(self) -> int:
        """Runtimes stopped for room that have not closed their files yet."""
        return len(self._leaving)

    async def admit(self, runtime: AgentRuntime) -> None:
        """Count ``runtime`` (about to start), once there is room for it (stopping idle ones to make it)."""
        room = self.room
        while room is not None and self.held >= room:
            if self.held - len(self._leaving) < room:  # enough are closing already
                await self._wait_change()
            elif not self._make_room(self.held - len(self._leaving) - room + self._batch(room)):
                self._warn_over(room)
                break
            room = self.room
        self._held.add(runtime)

    def released(self, runtime: AgentRuntime) -> None:
        """``runtime`` has stopped and closed its files, or never started (idempotent)."""
        self._held.discard(runtime)
        self._leaving.discard(runtime)
        self._notify()

    async def start_failed(self, error: BaseException) -> bool:
        """A runtime's start failed with ``error`` (its count already released): when the process ran out of
        files, take the runtimes alive now as the room, stop a batch of idle ones, wait for them to close, and
        say the start is worth one more try."""
        if not files_exhausted(error):
            return False
        room = max(1, self.held)
        if self.room is None or room < self.room:
            logger.warning("out of open files with %d live runtimes: at most %d live from now on", self.held, room)
            self.room = room
        self._make_room(self._batch(room))
        while self._leaving:
            await self._wait_change()
        return True

    def _make_room(self, count: int) -> int:
        """Stop up to ``count`` idle runtimes, the least recently active first; how many."""
        candidates = [
            (idle, runtime, evict)
            for source in self._sources
            for runtime, evict in source()
            if runtime not in self._leaving and (idle := runtime.idle_for()) is not None
        ]
        stopped = 0
        for _idle, runtime, evict in heapq.nlargest(count, candidates, key=lambda candidate: candidate[0]):
            if evict(runtime):
                self._leaving.add(runtime)
                stopped += 1
        self.evicted += stopped
        if stopped:
            logger.debug("%d idle runtime(s) stopped to stay under the open-files limit", stopped)
        return stopped

    @staticmethod
    def _batch(room: int) -> int:
        return max(1, room // 32)  # a burst of new chats scans the runtimes once per batch, not per chat

    def _warn_over(self, room: int) -> None:
        if not self._warned:
            self._warned = True
            logger.warning("%d runtimes alive and none idle: going over the room of %d under the open-files limit",
                           self.held, room)  # fmt: skip

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _wait_change(self) -> None:
        await self._changed.wait()
