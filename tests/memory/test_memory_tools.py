"""The memory tools: remember at the turn's level, recall within scope and trust, forget only what one may."""

from __future__ import annotations

from typing import Any

import pytest

from ishiki_host.core.entries import Entry
from ishiki_host.core.messages import ToolCall
from ishiki_host.core.tools import TrustLevel
from ishiki_host.core.turns import CallContext
from ishiki_host.memory.embedding import EmbeddingBacklog
from ishiki_host.memory.retrieval import VectorQuery
from ishiki_host.memory.tools import MEMORY_TOOL_NAMES, MemoryTools
from ishiki_host.store import MemoryStore
from ishiki_host.testing.embeddings import ConceptEmbedder

pytestmark = pytest.mark.anyio

ANA, BOB = "7", "8"
CHAT = "fake:bot private:1"


def said(user: str, text: str = "hi", channel: str = "private:1") -> Entry:
    source = {"platform": "fake", "selfId": "bot", "channelId": channel, "user": {"id": user}}
    return Entry(1, "message", 0.0, {"role": "user", "parts": [{"type": "text", "text": text}], "source": source})


class Turn:
    """The running turn the tools read: its new messages, and a session."""

    def __init__(self, *inbound: Entry):
        self.inbound = list(inbound)
        self.kicks = 0

    async def session(self) -> int | None:
        return None

    def written(self) -> None:
        self.kicks += 1


def tools_for(store: MemoryStore, turn: Turn, *, embed: bool = False, trust: TrustLevel = "trusted") -> MemoryTools:
    kit = ConceptEmbedder()

    async def query_vector(text: str) -> VectorQuery | None:
        if not embed:
            return None
        return VectorQuery(kit.name, (await kit.embed([text])).vectors[0], store.clock.now())

    return MemoryTools(store, "ana", "ana/fake:bot/private:1", "sender", trust, lambda: turn.inbound, turn.session,
                       query_vector, turn.written)  # fmt: skip


def ctx(trust: TrustLevel) -> CallContext:
    return CallContext(ToolCall("c1", "tool", {}), 1, 0, trust)


async def call(tools: MemoryTools, name: str, args: dict[str, Any], trust: TrustLevel = "trusted") -> Any:
    tool = next(t for t in tools.tools() if t.name == name)
    return await tool.handler(args, ctx(trust))


async def test_the_tools_need_the_configured_level(store: MemoryStore) -> None:
    tools = tools_for(store, Turn(), trust="owner").tools()
    assert [t.name for t in tools] == list(MEMORY_TOOL_NAMES)
    assert {t.trust for t in tools} == {"owner"}


async def test_remember_stores_at_the_turns_level_in_its_chat_and_of_its_sender(store: MemoryStore) -> None:
    turn = Turn(said(ANA))
    answer = await call(tools_for(store, turn), "remember", {"content": "Ana's puppy is called Biscuit."})
    memory = await store.memories.get(answer["id"])
    assert memory is not None
    assert (memory.type, memory.min_trust, memory.content) == ("fact", "trusted", "Ana's puppy is called Biscuit.")
    assert await store.memories.senders(memory.id) == [f"fake:{ANA}"]
    assert turn.kicks == 1
    lesson = await call(tools_for(store, turn), "remember", {"content": "Answer Ana briefly.", "type": "lesson"})
    assert (await store.memories.get(lesson["id"])).type == "lesson"  # type: ignore[union-attr]


async def test_recall_holds_trust_and_scope_and_finds_paraphrases_with_embeddings(store: MemoryStore) -> None:
    await store.memories.add("fact", "Ana adopted a puppy.", profile="ana", runtime_key="k", min_trust="trusted",
                             chats=[CHAT])  # fmt: skip
    await store.memories.add("fact", "The owner's hound is ill.", profile="ana", runtime_key="k", min_trust="owner",
                             chats=[CHAT])  # fmt: skip
    await store.memories.add("fact", "A puppy in another chat.", profile="ana", runtime_key="k2",
                             min_trust="untrusted", chats=["fake:bot private:2"])  # fmt: skip
    turn = Turn(said(ANA))
    found = await call(tools_for(store, turn), "recall", {"query": "puppy"})
    assert [m["content"] for m in found["memories"]] == ["Ana adopted a puppy."]
    assert set(found["memories"][0]) == {"id", "type", "date", "content"}
    assert (await call(tools_for(store, turn), "recall", {"query": "my dog"}))["memories"] == []
    assert await EmbeddingBacklog(store.vectors, ConceptEmbedder(), "ana").drain()
    near = await call(tools_for(store, turn, embed=True), "recall", {"query": "my dog"})
    assert [m["content"] for m in near["memories"]] == ["Ana adopted a puppy."]
    owner = await call(tools_for(store, turn, embed=True), "recall", {"query": "my dog"}, trust="owner")
    assert sorted(m["content"] for m in owner["memories"]) == ["Ana adopted a puppy.", "The owner's hound is ill."]


async def test_forget_only_what_one_may_and_the_unseen_looks_unknown(store: MemoryStore) -> None:
    about_ana = await call(tools_for(store, Turn(said(ANA))), "remember", {"content": "Ana likes tea."})
    about_bob = await call(tools_for(store, Turn(said(BOB))), "remember", {"content": "Bob likes coffee."})
    hidden = await store.memories.add("fact", "The owner's secret.", profile="ana", runtime_key="k", chats=[CHAT])
    elsewhere = await store.memories.add("fact", "Elsewhere.", profile="ana", runtime_key="k2", min_trust="untrusted",
                                         chats=["fake:bot private:2"])  # fmt: skip
    ana = tools_for(store, Turn(said(ANA)))
    refused = await call(ana, "forget", {"id": about_bob["id"]})
    assert refused.is_error
    assert "not about you" in refused.content
    unknown = await call(ana, "forget", {"id": 999})
    for unseen in (hidden.id, elsewhere.id):
        answer = await call(ana, "forget", {"id": unseen})
        assert answer.is_error
        assert answer.content.replace(str(unseen), "N") == unknown.content.replace("999", "N")
    assert await call(ana, "forget", {"id": about_ana["id"]}) == {"forgotten": about_ana["id"]}
    assert await store.memories.get(about_ana["id"]) is None
    owner = tools_for(store, Turn(said(ANA)))
    assert await call(owner, "forget", {"id": about_bob["id"]}, trust="owner") == {"forgotten": about_bob["id"]}
    assert await call(owner, "forget", {"id": hidden.id}, trust="owner") == {"forgotten": hidden.id}
