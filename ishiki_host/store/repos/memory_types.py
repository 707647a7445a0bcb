"""The values of the memories repository: a draft to add, a stored memory, a search hit."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from ishiki_host.core.tools import TRUST_ORDER
from ishiki_host.errors import StoreError

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel

__all__ = [
    "MAX_LIST",
    "MAX_SEARCH",
    "MEMORY_COLUMNS",
    "MEMORY_SCOPES",
    "MEMORY_TYPES",
    "REMINDER_BEAT_PREFIX",
    "RETRIEVABLE_TYPES",
    "Memory",
    "MemoryDraft",
    "MemoryHit",
    "MemoryScope",
    "MemoryType",
    "ScopeMode",
    "readable_levels",
    "reminder_beat_id",
]

MemoryType = Literal["summary", "fact", "lesson", "reminder"]
MEMORY_TYPES: tuple[MemoryType, ...] = get_args(MemoryType)
RETRIEVABLE_TYPES: tuple[MemoryType, ...] = ("summary", "fact", "lesson")
ScopeMode = Literal["sender", "channel", "profile"]
MEMORY_SCOPES: tuple[ScopeMode, ...] = get_args(ScopeMode)
REMINDER_BEAT_PREFIX = "r-"
"""The beat of a ``reminder`` memory is ``r-<memory id>``: how retrieval tells a reminder still to come."""
MAX_LIST = 50
MAX_SEARCH = 100
MEMORY_COLUMNS = (
    "m.id, m.type, m.content, m.profile, m.runtime_key, m.session_id, m.importance, m.min_trust, m.created_at"
)


def readable_levels(trust: TrustLevel) -> list[str]:
    """The ``min_trust`` values a reader at ``trust`` may read (its level and those below);
    ``StoreError`` for an unknown level."""
    if trust not in TRUST_ORDER:
        raise StoreError(f"trust level {trust!r} is not one of {', '.join(TRUST_ORDER)}")
    return [level for level, rank in TRUST_ORDER.items() if rank <= TRUST_ORDER[trust]]


def reminder_beat_id(memory_id: int) -> str:
    """The id of the one-shot beat a ``reminder`` memory was scheduled as (``r-12`` for memory 12)."""
    return f"{REMINDER_BEAT_PREFIX}{memory_id}"


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """A memory to add. ``min_trust`` is the lowest trust level that may read it (the turn's level);
    ``chats`` (``platform:selfId channelId``) are where it was made, ``senders`` (``platform:userId``) whom it
    involves: what ``MemoryScope`` matches."""

    type: MemoryType
    content: str
    profile: str
    runtime_key: str
    session_id: int | None = None
    importance: float = 0.5
    min_trust: TrustLevel = "owner"
    chats: tuple[str, ...] = ()
    senders: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryScope:
    """Which memories a reader may recall besides their level (``memory.scope`` of ``ishiki.yaml``).

    ``sender`` (the default): those made in one of ``chats`` or involving one of ``senders``; ``channel``: only
    those made in one of ``chats``; ``profile``: every memory of the profile. A memory made before memories
    recorded their chats and senders matches only in the runtime that made it (``runtime_key``).
    """

    mode: ScopeMode
    runtime_key: str
    chats: tuple[str, ...] = ()
    senders: tuple[str, ...] = ()

    def clause(self) -> tuple[str, tuple[object, ...]]:
        """The SQL condition on ``memories AS m`` and its parameters (``1`` for ``profile``)."""
        if self.mode == "profile":
            return "1", ()
        links = [("chat", v) for v in self.chats]
        if self.mode == "sender":
            links += [("sender", v) for v in self.senders]
        matched = " OR ".join("(l.kind = ? AND l.value = ?)" for _ in links) or "0"
        sql = (
            f"(EXISTS (SELECT 1 FROM memory_links AS l WHERE l.memory_id = m.id AND ({matched})) "
            "OR (m.runtime_key = ? AND NOT EXISTS (SELECT 1 FROM memory_links AS l WHERE l.memory_id = m.id)))"
        )
        return sql, (*(value for pair in links for value in pair), self.runtime_key)


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
