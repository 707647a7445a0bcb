"""Window selection of the ``standard`` context engine: whole exchanges, newest first, inside a token budget.

``select_window(newest_first, params)`` is a pure function of the entries it reads (``FactLog.read_back`` may
run it twice), and it reads only as far as it needs: to the current boundary, or to the budget and at most
``params.budget`` more tokens' worth while it looks for the summary that heads the window.

**Boundary.** Reading backwards, the first ``session`` entry ends the window (it is kept: it may carry a seed
summary); the newest ``compact`` entry stands for every entry up to its ``upto`` id, which are not read. Older
``compact`` entries are superseded. The boundary entry (the *head*) leads the window, whatever its position.

**Exchanges.** Live entries are grouped into units that are kept or dropped whole:

- a turn: every entry from its ``turn.start`` to its end event, with the messages that joined it;
- with the messages that led to it: every entry back to the oldest message its ``turn.start`` names as a
  trigger (``triggers[].entry``) and, in any case, the inbound user message right before it. A trigger
  inside an earlier turn merges the two turns into one unit;
- the running turn (``params.turn``) and everything after its start form the newest unit, always kept;
- any other entry (a group message no turn answered) is a unit of its own.

**Budget.** With ``B`` = ``params.budget`` and ``S`` the head's cost, units are kept newest first while their
sum stays within ``B - S`` (the newest one always). When some live unit does not fit, the window is over
budget and ``cut`` names where to compact: the units that fit within ``refill · B - S`` stay, the older ones
(up to the entry id ``cut``) are to be summarized. Until a compact entry lands, the window keeps every unit
that fits the full budget, so nothing leaves the model's sight before its summary exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ishiki_host.core.entries import Entry

__all__ = ["Grouper", "Unit", "Window", "WindowParams", "select_window", "trigger_ids"]

_ENDS = ("turn.done", "turn.failed", "turn.aborted")


@dataclass(frozen=True, slots=True)
class WindowParams:
    """What selection needs: the budget (tokens), the refill ratio, the running turn and the cost of an entry."""

    budget: int
    refill: float
    cost: Callable[[Entry], int]
    turn: int | None = None


@dataclass(slots=True)
class Unit:
    """Entries kept or dropped together, newest first, and their estimated cost."""

    entries: list[Entry] = field(default_factory=list)
    cost: int = 0

    @property
    def first_id(self) -> int:
        """The id of its oldest entry."""
        return self.entries[-1].id


@dataclass(frozen=True, slots=True)
class Window:
    """A selected window.

    ``entries``: the head (if any) then the kept entries, oldest first. ``upto``: the head compact's ``upto``
    (0 without one). ``cut``: when over budget, compact the entries up to this id (``None``: nothing to do).
    ``tokens``: the estimated cost of ``entries``. ``read``: how many entries were read.
    """

    entries: list[Entry]
    head: Entry | None
    upto: int
    cut: int | None
    tokens: int
    read: int


def select_window(newest_first: Iterator[Entry], params: WindowParams) -> Window:
    """The window of ``params`` over the entries, read newest first (see the module docstring)."""
    scan = _Scan(params)
    for entry in newest_first:
        if not scan.feed(entry):
            break
    return scan.result()


def trigger_ids(start: Entry) -> list[int]:
    """The entry ids a ``turn.start`` entry names as its triggers."""
    triggers = start.data.get("triggers")
    if not isinstance(triggers, list):
        return []
    ids = []
    for trigger in triggers:
        value = trigger.get("entry") if isinstance(trigger, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            ids.append(value)
    return ids


class _Scan:
    """The reading state of ``select_window``."""

    def __init__(self, params: WindowParams):
        self.params = params
        self.grouper = Grouper(params.turn)
        self.units: list[Unit] = []
        self.total = 0
        self.head: Entry | None = None
        self.upto = 0
        self.over = False
        self.skipped = 0
        self.read = 0

    def feed(self, entry: Entry) -> bool:
        """Take the next (older) entry; ``False`` once the window is known."""
        if entry.id <= self.upto:
            return False
        self.read += 1
        if entry.type == "session":
            self.head = self.head or entry
            return False
        if entry.type == "compact":
            if self.head is None:
                self.head, self.upto = entry, entry.upto
            return True
        if self.over:  # the window is decided; read on a little only to find its head
            self.skipped += self.params.cost(entry)
            return self.skipped <= self.params.budget
        for unit in self.grouper.feed(entry, self.params.cost(entry)):
            self._add(unit)
        return True

    def _add(self, unit: Unit) -> None:
        self.units.append(unit)
        self.total += unit.cost
        self.over = self.total > self.params.budget

    def result(self) -> Window:
        if not self.over:
            for unit in self.grouper.finish():
                self._add(unit)
        head_cost = self.params.cost(self.head) if self.head is not None else 0
        kept = _fit(self.units, self.params.budget - head_cost)
        cut = None
        if self.over or len(kept) < len(self.units):
            refill = _fit(self.units, int(self.params.refill * self.params.budget) - head_cost)
            floor = self.head.id if self.head is not None and self.head.type == "session" else self.upto
            cut = refill[-1].first_id - 1 if refill else None
            cut = cut if cut is not None and cut > floor else None
        entries = [entry for unit in reversed(kept) for entry in reversed(unit.entries)]
        if self.head is not None:
            entries.insert(0, self.head)
        tokens = head_cost + sum(unit.cost for unit in kept)
        return Window(entries, self.head, self.upto, cut, tokens, self.read)


def _fit(units: list[Unit], budget: int) -> list[Unit]:
    """The newest units whose sum stays within ``budget`` (the newest one always)."""
    kept: list[Unit] = []
    used = 0
    for unit in units:
        if kept and used + unit.cost > budget:
            break
        kept.append(unit)
        used += unit.cost
    return kept


class Grouper:
    """Groups entries, read newest first, into units (see the module docstring); ``_extend`` regroups with it."""

    def __init__(self, running_turn: int | None):
        self.unit: Unit | None = Unit() if running_turn is not None else None
        self.span: int | None = running_turn  # inside this turn until its turn.start is read
        self.need: int | None = None  # the unit reaches back at least to this entry id
        self.lead = False  # the unit still wants the user message that led to its turn
        self.fresh = False  # the last entry fed started a unit afresh (what follows depends only on it)

    def feed(self, entry: Entry, cost: int) -> list[Unit]:
        """Add an entry; returns the units it closed."""
        closed: list[Unit] = []
        if self.unit is not None and self.unit.entries and not self._belongs(entry):
            closed.append(self.unit)
            self.unit = None
        self.fresh = self.unit is None
        if self.unit is None:
            self.unit, self.span, self.need, self.lead = Unit(), entry.turn, None, False
        self.unit.entries.append(entry)
        self.unit.cost += cost
        self._advance(entry)
        return closed

    def finish(self) -> list[Unit]:
        """The unit being built, if any."""
        unit, self.unit = self.unit, None
        return [unit] if unit is not None and unit.entries else []

    def _belongs(self, entry: Entry) -> bool:
        if self.span is not None:  # an entry of another turn means this turn's start is missing: end here
            return entry.turn is None or entry.turn == self.span
        if self.need is not None and entry.id >= self.need:
            return True
        return self.lead and (_is_lead(entry) or entry.type not in ("message", "event"))

    def _advance(self, entry: Entry) -> None:
        if self.span is None and entry.turn is not None and self.need is not None:
            self.span = entry.turn  # a trigger lies inside an earlier turn: that turn joins the unit
        if entry.type == "event" and entry.name == "turn.start" and entry.turn == self.span:
            self.span, self.lead = None, True
            ids = [i for i in trigger_ids(entry) if i < entry.id]
            if ids:
                self.need = min(ids) if self.need is None else min(self.need, *ids)
        elif self.lead and _is_lead(entry):
            self.lead = False
        if self.need is not None and entry.id <= self.need:
            self.need = None


def _is_lead(entry: Entry) -> bool:
    """An inbound user message (written outside any turn, not a wake prompt)."""
    data: Any = entry.data
    return entry.type == "message" and entry.turn is None and data.get("role") == "user" and not data.get("wake")
