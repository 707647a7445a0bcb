"""The ``standard`` engine's window kept from step to step, so a step costs what it adds, not what the window holds.

``WindowCache.select(log, params)`` returns the window ``select_window`` would select from the log (the same
entries, head, ``upto``, ``cut`` and tokens; ``read`` counts the entries this call read), but it keeps the
live entries (those after the boundary, oldest first), their grouping into units and the units' costs between
calls. A call reads only the entries appended since the last one (from the log's cache), regroups only the
newest units and sums unit costs:

- **Regrouping.** Units are grouped reading newest first. The new entries, then the kept units from the
  newest, are fed to a fresh ``Grouper`` until one of the kept units (not the newest, whose start depended on
  the running turn) starts afresh at the same entry: the grouping of everything older depends only on that
  entry, so the kept units from there on stand.
- **Selection** walks the units newest first, as ``select_window`` does, and looks for the head within the
  same reach (a budget's worth of entries past the first unit that does not fit).
- **Rebuilt** from the log when the new entries hold a ``compact`` or ``session`` entry (a compaction,
  ``/clear``, a session boundary), when the log is another one (a respawned runtime) or was read again or gave
  its cache back (``FactLog.generation``: a hand edit, a cooled runtime), and when what is kept does not reach
  as far as the selection needs.
- **Bounded.** At most ``KEEP`` budgets' worth of live entries are kept (a window whose compaction keeps
  failing grows the log, not the memory); a selection that would need older ones rebuilds, and if the
  rebuilt copy still falls short, the window is selected from the log as ``select_window`` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from ishiki_host.engines.context._window import Grouper, Unit, Window, WindowParams, select_window

if TYPE_CHECKING:
    from collections.abc import Callable

    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol

__all__ = ["KEEP", "WindowCache"]

KEEP = 3
"""Budgets' worth of live entries a cache keeps (it trims back to this once it holds twice as much)."""
_BOUNDARIES = ("compact", "session")


@dataclass(slots=True)
class _Live:
    """The live entries kept: ``flat`` oldest first (no compact or session entry), the units' ``lengths`` and
    ``costs`` oldest first, ``head`` the boundary entry that heads the window with ``head_older`` entries of ``flat``
    older than it, ``complete`` when ``flat`` reaches back to the boundary (or the log's start)."""

    flat: list[Entry] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)
    head: Entry | None = None
    head_older: int = 0
    complete: bool = True
    last_id: int = 0
    turn: int | None = None


class WindowCache:
    """One engine instance's window, kept between steps (see the module docstring)."""

    def __init__(self) -> None:
        self._live: _Live | None = None
        self._log: FactLogProtocol | None = None
        self._generation = -1
        self.rebuilds = 0  # how many times the kept window was read again from the log (tests and benches)

    def clear(self) -> None:
        """Forget what is kept: the next selection reads the window from the log."""
        self._live = None

    async def select(self, log: FactLogProtocol, params: WindowParams) -> Window:
        """The window of ``params`` over ``log``, as ``select_window`` selects it."""
        if self._live is None or log is not self._log or log.generation != self._generation:
            return await self._rebuild(log, params)
        live = self._live
        new = await log.read_back(partial(_newer_than, after=live.last_id))
        if log.generation != self._generation or any(entry.type in _BOUNDARIES for entry in new):
            return await self._rebuild(log, params)
        if new or params.turn != live.turn:
            _extend(live, new, params)
        _trim(live, params)
        window = _select(live, params, len(new))
        return window if window is not None else await self._rebuild(log, params)

    async def _rebuild(self, log: FactLogProtocol, params: WindowParams) -> Window:
        self.rebuilds += 1
        self._live = live = await log.read_back(partial(_collect, limit=KEEP * max(params.budget, 1), params=params))
        self._log, self._generation = log, log.generation  # after the read: it may have read the file again
        window = _select(live, params, len(live.flat))
        if window is None:  # a unit larger than what is kept: read the window itself
            window = await log.read_back(partial(select_window, params=params))
        return window


def _newer_than(newest_first: Iterator[Entry], after: int) -> list[Entry]:
    """The entries after id ``after``, newest first."""
    new = []
    for entry in newest_first:
        if entry.id <= after:
            break
        new.append(entry)
    return new


def _collect(newest_first: Iterator[Entry], limit: int, params: WindowParams) -> _Live:
    """The live entries back to the boundary, or until they cost more than ``limit``, grouped into units."""
    live = _Live(turn=params.turn)
    newest: list[Entry] = []
    upto = total = 0
    for entry in newest_first:
        live.last_id = live.last_id or entry.id
        if entry.id <= upto:
            break
        if entry.type in _BOUNDARIES:
            if live.head is None:
                live.head, live.head_older = entry, len(newest)  # newer ones, for now
                upto = entry.upto if entry.type == "compact" else upto
            if entry.type == "session":
                break
            continue
        if total > limit:
            live.complete = False
            break
        newest.append(entry)
        total += params.cost(entry)
    live.head_older = len(newest) - live.head_older
    _extend(live, newest, params)
    return live


def _extend(live: _Live, newest_first: list[Entry], params: WindowParams) -> None:
    """Add entries newer than every kept one and regroup the newest units (see the module docstring)."""
    grouper = Grouper(params.turn)
    closed: list[Unit] = []
    for entry in newest_first:
        closed += grouper.feed(entry, params.cost(entry))
    end, kept = len(live.flat), len(live.lengths)
    for index in range(len(live.lengths) - 1, -1, -1):
        start = end - live.lengths[index]
        resynced = False
        for position in range(end - 1, start - 1, -1):
            entry = live.flat[position]
            closed += grouper.feed(entry, params.cost(entry))
            if position == end - 1 and index < len(live.lengths) - 1 and grouper.fresh:
                resynced = True
                break
        if resynced:
            kept = index + 1
            break
        end, kept = start, index
    else:
        closed += grouper.finish()
    live.lengths[kept:] = [len(unit.entries) for unit in reversed(closed)]
    live.costs[kept:] = [unit.cost for unit in reversed(closed)]
    live.flat.extend(reversed(newest_first))
    live.last_id = max(live.last_id, newest_first[0].id) if newest_first else live.last_id
    live.turn = params.turn


def _trim(live: _Live, params: WindowParams) -> None:
    """Drop the oldest units once the kept ones cost over twice ``KEEP`` budgets, down to ``KEEP`` budgets."""
    limit = KEEP * max(params.budget, 1)
    if sum(live.costs) <= 2 * limit:
        return
    total, index = 0, len(live.costs)
    while index > 0 and total <= limit:
        index -= 1
        total += live.costs[index]
    dropped = sum(live.lengths[:index])
    del live.lengths[:index], live.costs[:index], live.flat[:dropped]
    live.head_older -= dropped
    if live.head_older < 0:
        live.head, live.head_older = None, 0
    live.complete = False


def _select(live: _Live, params: WindowParams, read: int) -> Window | None:
    """The window over what is kept, or ``None`` when the selection needs entries that are not kept."""
    costs = live.costs
    over_at = None
    if sum(costs) > params.budget:
        total = 0
        for index in range(len(costs) - 1, -1, -1):
            total += costs[index]
            if total > params.budget:
                over_at = index
                break
    if over_at is None and not live.complete:
        return None
    if over_at is not None and over_at == 0 and not live.complete:
        return None
    head = live.head
    if over_at is not None and over_at > 0:
        found = _head_in_reach(live, sum(live.lengths[over_at:]), params.cost, params.budget)
        if found is None:
            return None
        head = head if found else None
    return _window(live, head, over_at, params, read)


def _head_in_reach(live: _Live, closing: int, cost: Callable[[Entry], int], budget: int) -> bool | None:
    """Whether the scan finds the head after the unit that did not fit (``closing``: the newest-first index
    of the entry that closed it; a budget's worth of entries after it are read); ``None``: not known."""
    flat, head = live.flat, live.head
    newer = len(flat) - live.head_older if head is not None else None
    skipped = 0
    for index in range(closing + 1, len(flat) + 1):
        if newer is not None and newer <= index:
            return True
        if index == len(flat):
            break
        skipped += cost(flat[len(flat) - 1 - index])
        if skipped > budget:
            return False
    return False if live.complete else None


def _window(live: _Live, head: Entry | None, over_at: int | None, params: WindowParams, read: int) -> Window:
    flat, lengths = live.flat, live.lengths
    first = over_at or 0  # the oldest unit the selection considers
    considered = live.costs[first:]
    head_cost = params.cost(head) if head is not None else 0
    kept = _fit(considered, params.budget - head_cost)
    upto = head.upto if head is not None and head.type == "compact" else 0
    cut = None
    if over_at is not None or kept < len(considered):
        refill = _fit(considered, int(params.refill * params.budget) - head_cost)
        floor = head.id if head is not None and head.type == "session" else upto
        if refill:
            cut = flat[len(flat) - sum(lengths[len(lengths) - refill :])].id - 1
            cut = cut if cut > floor else None
    start = len(flat) - sum(lengths[len(lengths) - kept :]) if kept else len(flat)
    entries = [head, *flat[start:]] if head is not None else flat[start:]
    tokens = head_cost + (sum(considered[len(considered) - kept :]) if kept else 0)
    return Window(entries, head, upto, cut, tokens, read)


def _fit(costs: list[int], budget: int) -> int:
    """How many of the newest units (their ``costs``, oldest first) stay within ``budget`` (the newest always)."""
    if sum(costs) <= budget:
        return len(costs)
    used = count = 0
    for index in range(len(costs) - 1, -1, -1):
        cost = costs[index]
        if count and used + cost > budget:
            break
        used += cost
        count += 1
    return count
