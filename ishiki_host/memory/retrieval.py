"""The "long-term memory" section of a turn's prompt: the memories most relevant to its new messages.

``memory_section`` searches the profile's memories with the text of the messages new in the turn (FTS5 BM25,
then recency; ``MemoriesRepo.search``) and renders at most ``limit`` of them. Given the embedding of that text
(a ``VectorQuery``: the profile has ``embeddings`` configured and the model answered in time), it also asks
the vector index for the nearest memories and fuses both rankings (``memory.hybrid``), so a memory that says
the same in other words is recalled too; without one it is the full-text search alone. A ``reminder`` is recalled only
while its beat is still to come (``r-<memory id>`` is scheduled, see ``memory.reminders``), so the persona
knows in that chat what it promised to remind of, and does not set it twice; a reminder with no beat (no time
was named, or it was refused) or one already given is not. It never returns:

- memories of the current session (what they hold is in the window already);
- the summary the session was seeded with (the window shows it once; ``exclude_ids``);
- memories above the turn's trust level: ``trust`` is the turn's level, so an untrusted sender's turn never
  sees what an owner-only exchange left behind (the owner's memories and personal details);
- memories outside the turn's ``scope`` (``memory.scope``): by default only those made in the turn's chats or
  involving its senders, so what person A told the persona in A's chat is not recalled in B's.

``limit`` comes from ``ishiki.yaml``'s ``memory`` block (``RetrievalSettings.from_host``); 0 turns the section
off.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host.memory.hybrid import fuse
from ishiki_host.sessions.summarizer import subjects_of
from ishiki_host.sessions.transcript import render_entry
from ishiki_host.store.repos.memory_types import MAX_SEARCH, MEMORY_SCOPES, MEMORY_TYPES, MemoryScope, ScopeMode

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.memory_types import Memory

__all__ = [
    "DEFAULT_LIMIT",
    "MEMORY_HEADER",
    "RetrievalSettings",
    "VectorQuery",
    "memory_day",
    "memory_section",
    "query_text",
    "relevant_memories",
    "render_memories",
    "turn_scope",
]

DEFAULT_LIMIT = 20
MEMORY_HEADER = (
    "Long-term memory: notes from earlier conversations that may help now. They may be outdated; "
    "trust what people say now over them, and never quote them to someone they are not about."
)
_QUERY_CHARS = 4_000


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    """How many memories a turn's prompt gets at most (``memory.limit`` in ``ishiki.yaml``), and which
    (``memory.scope``: see ``MemoryScope``)."""

    limit: int = DEFAULT_LIMIT
    scope: ScopeMode = "sender"

    @classmethod
    def from_host(cls, memory: Mapping[str, Any]) -> RetrievalSettings:
        """From the validated ``memory`` block; ``limit`` is clamped to 0..``MAX_SEARCH``."""
        limit = memory.get("limit", DEFAULT_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ValueError(f"memory.limit must be a whole number, not {limit!r}")
        scope = memory.get("scope", "sender")
        if scope not in MEMORY_SCOPES:
            raise ValueError(f"memory.scope must be one of {', '.join(MEMORY_SCOPES)}, not {scope!r}")
        return cls(min(max(0, limit), MAX_SEARCH), scope)


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """The embedding of a turn's search text, by the embeddings ``model`` whose vectors it is compared with,
    and the time recency is measured from."""

    model: str
    vector: Sequence[float]
    now: float


def turn_scope(mode: ScopeMode, runtime_key: str, inbound: Iterable[Entry]) -> MemoryScope:
    """The scope of a reader whose new messages are ``inbound``: their chats and senders."""
    chats, senders = subjects_of(inbound)
    return MemoryScope(mode, runtime_key, chats, senders)


def query_text(new_messages: Iterable[Entry]) -> str:
    """The search text for a turn: what its new messages say (the newest part when very long)."""
    text = "\n".join(line for entry in new_messages for line in render_entry(entry))
    return text[-_QUERY_CHARS:]


async def relevant_memories(
    store: MemoryStore,
    *,
    profile: str,
    text: str,
    trust: TrustLevel,
    limit: int,
    session_id: int | None,
    exclude_ids: Collection[int] = (),
    scope: MemoryScope | None = None,
    vector: VectorQuery | None = None,
) -> list[Memory]:
    """The ``limit`` memories most relevant to ``text`` readable at ``trust`` and within ``scope`` (see the
    module docstring); ``vector``: fused with the nearest memories by embedding."""
    if limit <= 0 or not text.strip() or not await store.memories.has_any(profile):
        return []
    where = store.memories.search_filter(
        profile,
        trust=trust,
        limit=min(limit + len(exclude_ids), MAX_SEARCH),
        exclude_session_id=session_id,
        types=MEMORY_TYPES,
        pending_reminders_only=True,
        scope=scope,
    )
    words = [hit.memory for hit in await store.memories.search_where(text, where)]
    if vector is None:
        return [memory for memory in words if memory.id not in exclude_ids][:limit]
    near = [hit.memory for hit in await store.vectors.nearest(vector.model, vector.vector, where)]
    rankings = [[m for m in ranking if m.id not in exclude_ids] for ranking in (words, near)]
    return fuse(rankings, now=vector.now, limit=limit)


def render_memories(memories: Iterable[Memory]) -> str | None:
    """The section text: a header and one dated line per memory; ``None`` when there are none."""
    lines = [f"- ({memory_day(m.created_at)}, {m.type}) {' '.join(m.content.split())}" for m in memories]
    return "\n".join([MEMORY_HEADER, *lines]) if lines else None


async def memory_section(
    store: MemoryStore,
    new_messages: Iterable[Entry],
    *,
    profile: str,
    trust: TrustLevel,
    limit: int,
    session_id: int | None,
    exclude_ids: Collection[int] = (),
    scope: MemoryScope | None = None,
    vector: VectorQuery | None = None,
) -> str | None:
    """The long-term memory section for a turn whose new messages are ``new_messages``; ``None`` for none."""
    memories = await relevant_memories(
        store,
        profile=profile,
        text=query_text(new_messages),
        trust=trust,
        limit=limit,
        session_id=session_id,
        exclude_ids=exclude_ids,
        scope=scope,
        vector=vector,
    )
    return render_memories(memories)


def memory_day(timestamp: float) -> str:
    """The UTC day of a memory's time, as memories show it (``2025-06-01``)."""
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d")
