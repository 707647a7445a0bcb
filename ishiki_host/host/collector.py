"""The garbage collector's thresholds while a host runs (``tuned_collector``).

CPython's default thresholds (700, 10, 10) start a young collection every 700 net allocations of container
objects. A host keeps hundreds of thousands of objects alive (its modules, its runtimes, their cached log
entries), and each turn allocates a few hundred that live as long as its model call. At the default most of
those survive two young collections, so they are promoted into the oldest generation, which then grows fast
enough to start a full collection (a walk over every object the collector tracks) every few hundred turns.
In ``bench/host_throughput.py`` (1,000 runtimes, 64 turns in flight) the collector took 1.0-1.4 ms of a turn's
2.7-3.3 ms of CPU at the default. A full collection there walks about 600,000 objects and takes 0.4-0.5 s on
the event loop; it runs once the objects promoted since the last one reach a quarter of the oldest generation,
and objects are promoted when they are alive at a middle collection (a burst's queued turns are). So the
fewer middle collections, the fewer full ones: with the youngest threshold at 25,000 a middle collection runs
every 250,000 net allocations, and a full one came every third wave of 1,000 turns instead of every second
(at 10,000: 0.25-0.35 ms of GC per turn; at 25,000: about 0.15 ms). The oldest generation is considered after
every middle collection: a full collection still runs only when enough has accumulated there, but the garbage
of evicted runtimes is found soon (with the default third threshold of 10 it waited ten times longer, and
``bench/host_memory.py`` ended its churn 50% above the baseline; at 25,000 / 10 / 1 it ends 7% above, at
10,000 / 10 / 1 1% above, at 50,000 / 10 / 1 14% above).

While at least one host runs, the thresholds are ``THRESHOLDS`` (unless the youngest one is already at least
as high, or the collector is disabled: then nothing changes); when the last host stops, the thresholds it
found are restored unless someone changed them in between.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["THRESHOLDS", "tuned_collector"]

THRESHOLDS = (25_000, 10, 1)
"""The collector's thresholds while a host runs (``gc.set_threshold``)."""

_holders = 0
_found: tuple[int, ...] | None = None  # the thresholds before the first holder
_set: tuple[int, ...] | None = None  # what the first holder set (None: it changed nothing)


@contextlib.contextmanager
def tuned_collector() -> Iterator[None]:
    """Use ``THRESHOLDS`` for the block (see the module docstring); nests."""
    global _holders, _found, _set
    if _holders == 0:
        _found = gc.get_threshold()
        _set = None
        if gc.isenabled() and _found[0] < THRESHOLDS[0]:
            _set = THRESHOLDS
            gc.set_threshold(*_set)
    _holders += 1
    try:
        yield
    finally:
        _holders -= 1
        if _holders == 0 and _set is not None and _found is not None and gc.get_threshold() == _set:
            gc.set_threshold(*_found)
