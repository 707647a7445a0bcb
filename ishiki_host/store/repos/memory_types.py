"""The values of the memories repository: a draft to add, a stored memory, a search hit."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel

__all__ = [
    "MAX_LIST",
    "MAX_SEARCH",
    "MEMORY_COLUMNS",
    "MEMORY_TYPES",
    "RETRIEVABLE_TYPES",
    "Memory",
    "MemoryDraft",
    "MemoryHit",
    "MemoryType",
]

MemoryType = Literal["summary", "fact", "lesson", "reminder"]
MEMORY_TYPES: tuple[MemoryType, ...] = get_args(MemoryType)
RETRIEVABLE_TYPES: tuple[MemoryType, ...] = ("summary", "fact", "lesson")
MAX_LIST = 50
MAX_SEARCH = 100
MEMORY_COLUMNS = (
    "m.id, m.type, m.content, m.profile, m.runtime_key, m.session_id, m.importance, m.min_trust, m.created_at"
)


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """A memory to add. ``min_trust`` is the lowest trust level that may read it (the turn's level)."""

    type: MemoryType
    content: str
    profile: str
    runtime_key: str
    session_id: int | None = None
    importance: float = 0.5
    min_trust: TrustLevel = "owner"


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory."""

    id: int
    type: MemoryType
    content: str
    profile: str
    runtime_key: str
    session_id: int | None
    importance: float
    min_trust: TrustLevel
    created_at: float

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Memory:
        """Build from a row selected with ``MEMORY_COLUMNS``."""
        return cls(*(row[i] for i in range(9)))


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A search result: the memory and its BM25 score (lower is more relevant, as SQLite reports it)."""

    memory: Memory
    score: float
