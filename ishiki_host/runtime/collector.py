"""The garbage collector's thresholds while a host runs (``tuned_collector``).

CPython's default thresholds (700, 10, 10) start a young collection every 700 net allocations of container
objects. A host keeps hundreds of thousands of objects alive (its modules, its runtimes, their cached log
entries), and each turn allocates a few hundred that live as long as its model call. At the default most of
those survive two young collections, so they are promoted into the oldest generation, which then grows fast
enough to start a full collection (a walk over every object the collector tracks) every few hundred turns.
In ``bench/host_throughput.py`` (1,000 runtimes, 64 turns in flight) that made the collector about 40% of the
CPU of a turn; with the youngest threshold at ``YOUNG_THRESHOLD`` nearly all of them die young and the
collector costs a few percent. Memory is unchanged in practice: at most ``YOUNG_THRESHOLD`` more container
objects wait for a collection, and what reference counting frees (most of it) is freed at once as before.

While at least one host runs, the youngest threshold is raised to ``YOUNG_THRESHOLD`` (never lowered, and left
alone while the collector is disabled); when the last host stops, the thresholds it found are restored unless
someone changed them in between.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["YOUNG_THRESHOLD", "tuned_collector"]

YOUNG_THRESHOLD = 10_000
"""Net container allocations between young collections while a host runs."""

_holders = 0
_found: tuple[int, ...] | None = None  # the thresholds before the first holder
_set: tuple[int, ...] | None = None  # what the first holder set (None: it changed nothing)


@contextlib.contextmanager
def tuned_collector() -> Iterator[None]:
    """Raise the youngest collection threshold for the block (see the module docstring); nests."""
    global _holders, _found, _set
    if _holders == 0:
        _found = gc.get_threshold()
        _set = None
        if gc.isenabled() and _found[0] < YOUNG_THRESHOLD:
            _set = (YOUNG_THRESHOLD, *_found[1:])
            gc.set_threshold(*_set)
    _holders += 1
    try:
        yield
    finally:
        _holders -= 1
        if _holders == 0 and _set is not None and _found is not None and gc.get_threshold() == _set:
            gc.set_threshold(*_found)
