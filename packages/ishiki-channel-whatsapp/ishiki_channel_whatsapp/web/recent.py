"""``Recent``: a bounded memory, oldest forgotten first, for what a connection needs of its recent traffic.

Two are kept: the ids the device sent (its own echoes are dropped by id) and, for each recent inbound message,
what a reply needs to quote it (WhatsApp shows a quote from the sender and text the reply carries, not from its
id alone). Both concern the last minutes: the host replies to what just came, and an echo follows its send.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["RECENT_KEPT", "Recent"]

RECENT_KEPT = 4096
V = TypeVar("V")


class Recent(Generic[V]):
    """The last ``limit`` keys added, with their values."""

    def __init__(self, limit: int = RECENT_KEPT):
        self.limit = limit
        self._items: OrderedDict[str, V] = OrderedDict()

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def add(self, key: str, value: V) -> None:
        """Remember ``key`` (forgetting the oldest beyond ``limit``)."""
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def get(self, key: str | None) -> V | None:
        """The value of ``key``, if it is still remembered."""
        return self._items.get(key) if key is not None else None
