"""The garbage collector's thresholds while a host runs (``tuned_collector``).

CPython's default thresholds (700, 10, 10) start a young collection every 700 net allocations of container
objects. A host keeps hundreds of thousands of objects alive (its modules, its runtimes, their cached log
entries), and each turn allocates a few hundred that live as long as its model call. At the default most of
those survive two young collections, so they are promoted into the oldest generation, which then grows fast
enough to start a full collection (a walk over every object the collector tracks, on the event loop) every
few hundred turns. A full collection runs once the objects promoted since the last one reach a quarter of the
oldest generation, and objects are promoted when they are alive at a middle collection (a burst's queued turns
are). So the fewer middle collections, the fewer full ones: a high youngest threshold (``THRESHOLDS``) makes
middle collections rare. The oldest generation is considered after every middle collection (third threshold
1), so the garbage of evicted runtimes is found soon. The measurements behind these numbers are in
``docs/benchmarks.md`` (the garbage collector).

While at least one host runs, the thresholds are ``THRESHOLDS`` (unless the youngest one is already at least
as high, or the collector is disabled: then nothing changes); when the last host stops, the thresholds it
found are restored unless someone changed them in between.

``freeze_startup_heap`` is for the process that runs a host (``ishiki run``, each worker), once the host has
started: what start-up made and still holds (modules, classes, schemas, the plugins' objects: about 140,000
objects with one profile) is collected once and moved out of the collector's sight (``gc.freeze``), so no later
full collection walks it again. A frozen object that later becomes part of a garbage cycle is not collected,
so calling it again (a host served anew in the same process) first unfreezes what the last call froze, and the
garbage the earlier host left is collected then. Not for a process that starts host after host all the time (a
test run).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["THRESHOLDS", "freeze_startup_heap", "tuned_collector"]

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


def freeze_startup_heap() -> int:
    """Unfreeze, collect, then freeze what is left (see the module docstring); how many objects are frozen."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
