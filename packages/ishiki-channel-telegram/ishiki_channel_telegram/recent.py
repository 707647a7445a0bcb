"""``RecentIds``: a bounded memory of the update ids a connection handled, to recognise a repeat.

Update ids are not assumed to grow (Telegram renumbers at random after a week without updates), so "below the
offset" cannot tell a repeat from a new update: membership here does. The oldest ids are forgotten first.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["RECENT_IDS_KEPT", "RecentIds"]

RECENT_IDS_KEPT = 4096
"""How many ids are remembered: far more than one ``getUpdates`` batch (at most 100) or a redelivery holds."""


class RecentIds:
    """The last ``limit`` ids added, oldest forgotten first."""

    def __init__(self, limit: int = RECENT_IDS_KEPT):
        self.limit = limit
        self._ids: OrderedDict[int, None] = OrderedDict()

    def __contains__(self, update_id: object) -> bool:
        return update_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, update_id: int) -> None:
        """Remember ``update_id`` (forgetting the oldest beyond ``limit``)."""
        self._ids[update_id] = None
        self._ids.move_to_end(update_id)
        while len(self._ids) > self.limit:
            self._ids.popitem(last=False)

    def clear(self) -> None:
        """Forget every id (a new numbering began)."""
        self._ids.clear()
