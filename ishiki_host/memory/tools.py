"""The memory tools: ``remember``, ``recall``, ``forget`` (the memory extension's, with ``tools: trusted`` for
turns at ``trusted`` and above, ``tools: owner`` for the owner's; off by default; untrusted turns never get
them).

Scoping and trust hold as in automatic recall (``memory.retrieval``):

- ``remember`` stores a fact or a lesson readable at the turn's level at least (``min_trust`` is the turn's
  level), linked to the turn's chats and senders, in the current session; the background backlog embeds it;
- ``recall`` searches the way a turn's prompt does (hybrid when the profile has embeddings), at the turn's
  level and within its scope; it also finds memories of the current session (the model asked for them);
- ``forget`` deletes a memory by id when the turn may see it and the asker may forget it: the owner, or a
  person the memory is about (one of its senders). An id the asker may not see gets the same answer as an id
  that does not exist, so ids cannot be probed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host.core.tools import Tool, ToolResult
from ishiki_host.memory.retrieval import VectorQuery, memory_day, relevant_memories, turn_scope
from ishiki_host.sessions.summarizer import subjects_of
from ishiki_host.store.repos.memory_types import MEMORY_TYPES

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.tools import ToolContext, TrustLevel
    from ishiki_host.jsontypes import Json
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.memory_types import Memory, MemoryScope, ScopeMode

__all__ = ["MAX_REMEMBER_CHARS", "MEMORY_TOOL_NAMES", "MemoryTools"]

MEMORY_TOOL_NAMES = ("remember", "recall", "forget")
MAX_REMEMBER_CHARS = 2_000
_REMEMBER: Mapping[str, Json] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "minLength": 1, "maxLength": MAX_REMEMBER_CHARS,
                    "description": "The fact, in one or two sentences that make sense on their own later."},
        "type": {"enum": ["fact", "lesson"], "default": "fact",
                 "description": "fact: about people and the world; lesson: how you should act next time."},
    },
    "required": ["content"],
    "additionalProperties": False,
}  # fmt: skip
_RECALL: Mapping[str, Json] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "description": "What to look for, in your own words."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
    },
    "required": ["query"],
    "additionalProperties": False,
}
_FORGET: Mapping[str, Json] = {
    "type": "object",
    "properties": {"id": {"type": "integer", "minimum": 1, "description": "The memory's id, as recall shows it."}},
    "required": ["id"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class MemoryTools:
    """The three tools of one runtime, and what they need of it (see the module docstring).

    ``inbound`` gives the running turn's new messages (its chats and senders), ``session`` the current session's
    id, ``query_vector`` the embedding of a search text (or ``None``), ``written`` is told after a memory is
    stored (the backlog's kick).
    """

    store: MemoryStore
    profile: str
    runtime_key: str
    scope_mode: ScopeMode
    trust: TrustLevel
    inbound: Callable[[], Sequence[Entry]]
    session: Callable[[], Awaitable[int | None]]
    query_vector: Callable[[str], Awaitable[VectorQuery | None]]
    written: Callable[[], None]

    def tools(self) -> list[Tool]:
        """``remember``, ``recall`` and ``forget``, each needing ``trust``."""
        return [
            Tool("remember", "Keep a fact or a lesson in long-term memory, for later conversations. Returns its id.",
                 self.remember, _REMEMBER, trust=self.trust),
            Tool("recall", "Search long-term memory (notes from earlier conversations) by meaning and by words.",
                 self.recall, _RECALL, trust=self.trust),
            Tool("forget", "Delete a memory by id: one about the person asking, or any when the owner asks.",
                 self.forget, _FORGET, trust=self.trust),
        ]  # fmt: skip

    def _scope(self) -> MemoryScope:
        return turn_scope(self.scope_mode, self.runtime_key, self.inbound())

    async def remember(self, args: Mapping[str, Any], ctx: ToolContext) -> Json:
        """Store ``content`` as a ``type`` memory at the turn's level, in its chats and of its senders."""
        chats, senders = subjects_of(self.inbound())
        memory = await self.store.memories.add(
            "lesson" if args.get("type") == "lesson" else "fact",
            str(args["content"])[:MAX_REMEMBER_CHARS],
            profile=self.profile,
            runtime_key=self.runtime_key,
            session_id=await self.session(),
            min_trust=ctx.trust,
            chats=chats,
            senders=senders,
        )
        self.written()
        return {"id": memory.id, "remembered": memory.content}

    async def recall(self, args: Mapping[str, Any], ctx: ToolContext) -> Json:
        """The memories most relevant to ``query`` the turn may read, newest date first among equals."""
        query = str(args["query"])
        found = await relevant_memories(
            self.store,
            profile=self.profile,
            text=query,
            trust=ctx.trust,
            limit=int(args.get("limit", 5)),
            session_id=None,
            scope=self._scope(),
            vector=await self.query_vector(query),
        )
        return {"memories": [_shown(memory) for memory in found]}

    async def forget(self, args: Mapping[str, Any], ctx: ToolContext) -> Json | ToolResult:
        """Delete memory ``id`` when the turn may see it and the asker may forget it (module docstring)."""
        memory_id = int(args["id"])
        where = self.store.memories.search_filter(
            self.profile, trust=ctx.trust, types=MEMORY_TYPES, scope=self._scope(), limit=1
        )
        if await self.store.memories.visible(memory_id, where) is None:
            return ToolResult.error(f"there is no memory {memory_id}")
        if ctx.trust != "owner":
            about = set(await self.store.memories.senders(memory_id))
            if not about & set(subjects_of(self.inbound())[1]):
                return ToolResult.error(
                    f"memory {memory_id} is not about you: only the owner, or the person it is about, may forget it"
                )
        await self.store.memories.delete(memory_id)
        self.store.vectors.forget_counts()
        return {"forgotten": memory_id}


def _shown(memory: Memory) -> dict[str, Json]:
    return {"id": memory.id, "type": memory.type, "date": memory_day(memory.created_at), "content": memory.content}
