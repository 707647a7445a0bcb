"""How busy the host has been lately: turns per minute and errors in the last hour, for a glance (the
dashboard's overview, ``ishiki status``).

``RecentActivity`` is a turn listener with a ring of one-minute buckets on the host's clock: each bucket counts
the turns that ended in it by status (``done``, ``failed``, ``aborted``, ``dropped``) and the errors logged in
it: ``handler()`` is a logging handler at ERROR that the host keeps on the root logger while it runs, so a
channel's crash, a plugin that failed, an extension that raised are each one, whoever logged them. A failed
turn is counted by its status, not as an error (what made it fail logged its own line). A turn costs one dict
increment, and nothing grows with the host's life: buckets older than an hour are dropped as new ones start.
``snapshot()`` sums them::

    {"turnsLastMinute": 3, "turnsPerMinute": 2.4, "turnsLastHour": 144, "failedTurnsLastHour": 1,
     "errorsLastHour": 2, "turnsByStatus": {"done": 143, "failed": 1}}

``turnsLastMinute`` counts the minute under way (by the host's clock, from its start); ``turnsPerMinute`` is
the mean over the last 15 minutes, or over the minutes since the host started when fewer have passed, so a
host up for a minute does not report a fifteenth of its rate.

A supervisor of ``ishiki run --workers N`` runs no turn: it ``include``s its workers' snapshots (as they said
them last), summed into its own (``ishiki_host.observe.fleetstatus.merged_activity``).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ishiki_host.observe.fleetstatus import merged_activity

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.clock import Clock
    from ishiki_host.jsontypes import Json
    from ishiki_host.plugins.runtime_api import TurnReport

__all__ = ["RATE_MINUTES", "RecentActivity"]

RATE_MINUTES = 15
"""The window ``turnsPerMinute`` averages over."""

_HOUR = 60


class _Minute:
    __slots__ = ("errors", "index", "turns")

    def __init__(self, index: int):
        self.index = index
        self.turns: Counter[str] = Counter()
        self.errors = 0


class RecentActivity:
    """Turns and errors of the last hour by minute (see the module docstring)."""

    def __init__(self, clock: Clock):
        self._clock = clock
        self._started = clock.monotonic()
        self._minutes: deque[_Minute] = deque()
        self._guard = threading.Lock()  # errors are logged from worker threads too
        self._handler = _ErrorCounter(self)
        self._included: list[Callable[[], Iterable[Mapping[str, Json]]]] = []

    def include(self, snapshots: Callable[[], Iterable[Mapping[str, Json]]]) -> None:
        """Add ``snapshots()`` (other processes' snapshots) to every ``snapshot()``."""
        self._included.append(snapshots)

    def __call__(self, key: RuntimeKey, report: TurnReport) -> None:
        """The turn listener: count the turn that just ended by its status."""
        with self._guard:
            self._current().turns[report.status] += 1

    def error(self) -> None:
        """Note an error (what ``handler()`` does for each record at ERROR or above)."""
        with self._guard:
            self._current().errors += 1

    @contextmanager
    def counting_errors(self, logger: logging.Logger | None = None) -> Iterator[RecentActivity]:
        """Count what ``logger`` (the root logger by default) and its children log at ERROR while the block
        runs."""
        target = logger if logger is not None else logging.getLogger()
        target.addHandler(self._handler)
        try:
            yield self
        finally:
            target.removeHandler(self._handler)

    def snapshot(self) -> dict[str, Json]:
        """The sums of the last minute, the last ``RATE_MINUTES`` and the last hour (see the module docstring),
        with the included snapshots'."""
        own = self._own()
        if not self._included:
            return own
        return merged_activity([own, *(s for snapshots in self._included for s in snapshots())])

    def _own(self) -> dict[str, Json]:
        now = self._index()
        with self._guard:
            self._expire(now)
            minutes = [(m.index, Counter(m.turns), m.errors) for m in self._minutes]
        by_status: Counter[str] = Counter()
        last_minute = recent = errors = 0
        for index, counts, errors_then in minutes:
            turns = sum(counts.values())
            by_status.update(counts)
            errors += errors_then
            if index == now:
                last_minute = turns
            if now - index < RATE_MINUTES:
                recent += turns
        elapsed = (self._clock.monotonic() - self._started) / 60.0
        window = min(float(RATE_MINUTES), max(elapsed, 1.0))
        return {
            "turnsLastMinute": last_minute,
            "turnsPerMinute": round(recent / window, 2),
            "turnsLastHour": sum(by_status.values()),
            "failedTurnsLastHour": by_status.get("failed", 0),
            "errorsLastHour": errors,
            "turnsByStatus": dict(sorted(by_status.items())),
        }

    def _index(self) -> int:
        return int((self._clock.monotonic() - self._started) // 60)

    def _current(self) -> _Minute:
        now = self._index()
        if not self._minutes or self._minutes[-1].index != now:
            self._expire(now)
            self._minutes.append(_Minute(now))
        return self._minutes[-1]

    def _expire(self, now: int) -> None:
        while self._minutes and now - self._minutes[0].index >= _HOUR:
            self._minutes.popleft()


class _ErrorCounter(logging.Handler):
    """Counts each record at ERROR or above into its ``RecentActivity``."""

    def __init__(self, activity: RecentActivity):
        super().__init__(logging.ERROR)
        self._activity = activity

    def emit(self, record: logging.LogRecord) -> None:
        self._activity.error()
