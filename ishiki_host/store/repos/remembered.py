"""``Remembered``: what a read answered, per key, until a write; one read in flight per key.

Every turn asks a few questions of the memory database whose answers change only when this process writes
(does the profile have memories, which skills exist, which plugins are switched off). A repository remembers
those answers and forgets them when it writes. When many runtimes start at once (a burst of new channels),
they all miss at the same moment: the first read of a key is shared by the callers that arrive while it
runs, so a burst costs one database read per key instead of one per runtime.

A read that overlapped a write is handed to the callers that shared it (they asked before the write ended)
but not remembered; a caller that arrives after the write starts a read of its own. When the shared read
fails or is cancelled, each caller that waited on it reads for itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio

__all__ = ["Remembered"]

K = TypeVar("K")
V = TypeVar("V")


@dataclass(eq=False)
class _Read(Generic[V]):
    """A read in flight: callers that arrive meanwhile wait for ``done`` and take ``value``."""

    done: anyio.Event = field(default_factory=anyio.Event)
    value: list[V] = field(default_factory=list)  # empty unless the read succeeded


class Remembered(Generic[K, V]):
    """Answers per key (see the module docstring)."""

    def __init__(self) -> None:
        self._known: dict[K, V] = {}
        self._reading: dict[K, _Read[V]] = {}
        self._writes = 0

    async def get(self, key: K, read: Callable[[], Awaitable[V]]) -> V:
        """The remembered answer for ``key``, else the answer of the read in flight, else ``read()``'s."""
        if key in self._known:
            return self._known[key]
        shared = self._reading.get(key)
        if shared is not None:
            await shared.done.wait()
            return shared.value[0] if shared.value else await read()
        return await self._lead(key, read)

    async def _lead(self, key: K, read: Callable[[], Awaitable[V]]) -> V:
        shared: _Read[V] = _Read()
        self._reading[key] = shared
        writes = self._writes
        try:
            shared.value.append(await read())
        finally:
            if self._reading.get(key) is shared:
                del self._reading[key]
            shared.done.set()
        if writes == self._writes:
            self._known[key] = shared.value[0]
        return shared.value[0]

    def forget(self) -> None:
        """A write may have changed every answer: forget them, and do not remember the reads in flight."""
        self._writes += 1
        self._known.clear()
        self._reading.clear()

    def learn(self, key: K, value: V) -> None:
        """A write made ``value`` the answer for ``key``; the other answers stay (reads in flight are not kept)."""
        self._writes += 1
        self._reading.clear()
        self._known[key] = value
