"""Who runs a runtime key: the seam between routing an event and the process that takes it.

``RuntimeOwners`` answers "which worker owns this key". On one machine (``HashOwners``) it is a stable hash of
the key's text modulo the number of workers: the same key lands on the same worker in every process and every
run (``hash()`` would not: Python salts it per process), so one turn at a time per runtime holds and each fact
log keeps its single writer. Several hosts (issue 25) replace it with leases held in PostgreSQL; what asks
the question does not change.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

__all__ = ["HashOwners", "RuntimeOwners"]


class RuntimeOwners(Protocol):
    """Which of ``count`` workers owns a runtime key."""

    @property
    def count(self) -> int:
        """How many workers there are."""
        ...

    def owner(self, key: str) -> int:
        """The index (from 0) of the worker that owns ``key`` (a ``RuntimeKey``'s text)."""
        ...


class HashOwners:
    """The local owners: a stable hash of the key (see the module docstring)."""

    def __init__(self, count: int):
        if count < 1:
            raise ValueError(f"a host has at least one worker, not {count}")
        self._count = count

    @property
    def count(self) -> int:
        """How many workers there are."""
        return self._count

    def owner(self, key: str) -> int:
        """``blake2b(key)`` (8 bytes) modulo the count."""
        digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "big") % self._count
