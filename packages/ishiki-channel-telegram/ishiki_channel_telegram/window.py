"""``Window``: the updates a polling connection fetched and has not confirmed yet, in the order they came.

Updates are handled out of order (a command goes ahead of a message still being dispatched), but confirmed in
order: the offset moves past an update only once it and every update fetched before it are handled. The
window keeps each unhandled update whole (what the state file ``held`` is made of) and, for a handled one,
only its id until the ones before it are handled too (``ahead``). Ids are not assumed to grow (Telegram
renumbers after a long pause): the order is the order of arrival, never of ids.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import anyio

__all__ = ["Window"]


class Window:
    """Fetched, not yet confirmed updates (see the module docstring); ``await changed()`` wakes on any change."""

    def __init__(self) -> None:
        self._entries: OrderedDict[int, dict[str, Any] | None] = OrderedDict()  # None: handled
        self._unhandled = 0
        self._changed: anyio.Event | None = None  # made by the first waiter: most changes have none

    def __contains__(self, update_id: object) -> bool:
        return update_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def pending(self) -> bool:
        """Whether an update of the window is not handled yet."""
        return self._unhandled > 0

    def add(self, update_id: int, update: dict[str, Any]) -> None:
        """An update just fetched, not handled yet (an id already in the window is left as it is)."""
        if update_id not in self._entries:
            self._entries[update_id] = update
            self._unhandled += 1
            self._notify()

    def done(self, update_id: int) -> int | None:
        """Mark ``update_id`` handled; the offset past the handled updates at the front, if that moved."""
        if self._entries.get(update_id) is not None:
            self._entries[update_id] = None
            self._unhandled -= 1
        last = None
        while self._entries and next(iter(self._entries.values())) is None:
            last, _ = self._entries.popitem(last=False)
        self._notify()
        return None if last is None else last + 1

    def held(self) -> tuple[dict[str, Any], ...]:
        """The updates not handled yet, oldest first."""
        return tuple(update for update in self._entries.values() if update is not None)

    def ahead(self) -> tuple[int, ...]:
        """The ids handled while an update before them is not."""
        return tuple(update_id for update_id, update in self._entries.items() if update is None)

    async def changed(self) -> None:
        """Return at the next change."""
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None
