"""Hybrid recall: full text and embeddings fused by reciprocal rank, with trust, scope and sessions still held."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ishiki_host.config.models import ModelsConfig, ModelSpec
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.tools import TrustLevel
from ishiki_host.gateway import Gateway
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.gateway.embeddings import Embedder, GatewayEmbeddings
from ishiki_host.memory.embedding import EmbeddingBacklog
from ishiki_host.memory.hybrid import RRF_K, fuse, weight
from ishiki_host.memory.retrieval import VectorQuery, relevant_memories
from ishiki_host.store import Memory, MemoryStore, MemoryType
from ishiki_host.store.repos.memory_types import MemoryScope
from ishiki_host.testing import FakeOpenAIServer

pytestmark = pytest.mark.anyio

DAY = 86_400.0


@pytest.fixture
async def embedder(fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI]) -> AsyncIterator[Embedder]:
    config = ModelsConfig(providers={"local": fake_openai.provider("local", (ModelSpec("embed"),))})
    async with Gateway(config, model_apis, clock=FakeClock()) as gateway:
        yield GatewayEmbeddings(lambda: gateway)("local:embed")


async def add(
    store: MemoryStore, content: str, *, trust: TrustLevel = "untrusted", chat: str = "tg:1 private:1",
    session: int | None = None, type: MemoryType = "fact",
) -> int:  # fmt: skip
    memory = await store.memories.add(type, content, profile="ana", runtime_key="k", min_trust=trust, chats=[chat],
                                      session_id=session)  # fmt: skip
    return memory.id


async def recall(
    store: MemoryStore, embedder: Embedder | None, text: str, *, trust: TrustLevel = "owner", limit: int = 3,
    **kw: object,
) -> list[str]:  # fmt: skip
    vector = None
    if embedder is not None:
        await EmbeddingBacklog(store.vectors, embedder, "ana").drain()
        embedded = await embedder.embed([text], priority="interactive")
        vector = VectorQuery(embedder.name, embedded.vectors[0], store.clock.now())
    options: dict[str, object] = {"session_id": None, **kw}
    found = await relevant_memories(
        store,
        profile="ana",
        text=text,
        trust=trust,
        limit=limit,
        vector=vector,
        **options,  # type: ignore[arg-type]
    )
    return [m.content for m in found]


async def test_a_paraphrase_is_recalled_only_with_embeddings(store: MemoryStore, embedder: Embedder) -> None:
    await add(store, "Maria adopted a puppy named Biscuit.")
    await add(store, "The tax office wants the forms by June.")
    await add(store, "Tom plays chess on Sundays.")
    question = "How is her dog doing?"
    assert await recall(store, None, question) == []  # no word in common
    assert (await recall(store, embedder, question, limit=1)) == ["Maria adopted a puppy named Biscuit."]


async def test_a_word_match_still_counts(store: MemoryStore, embedder: Embedder) -> None:
    await add(store, "Biscuit is the name of Maria's puppy.")
    await add(store, "Maria's sister lives in Lisbon.")
    found = await recall(store, embedder, "Where does Biscuit sleep?", limit=2)
    assert found[0] == "Biscuit is the name of Maria's puppy."


async def test_trust_scope_and_the_current_session_hold(store: MemoryStore, embedder: Embedder) -> None:
    session = await store.sessions.open("k", start_fact_id=1)
    await add(store, "The owner's puppy is ill.", trust="owner")
    await add(store, "A puppy was mentioned in another chat.", chat="tg:1 private:2")
    await add(store, "A puppy was mentioned in this very session.", session=session.id)
    await add(store, "The group's hound is called Rex.")
    scope = MemoryScope("sender", "k", chats=("tg:1 private:1",))
    found = await recall(store, embedder, "my dog?", trust="untrusted", scope=scope, session_id=session.id, limit=5)
    assert found == ["The group's hound is called Rex."]
    assert "The owner's puppy is ill." in await recall(store, embedder, "my dog?", trust="owner", limit=5)


async def test_excluded_ids_are_left_out_of_both_rankings(store: MemoryStore, embedder: Embedder) -> None:
    seed = await add(store, "Maria adopted a puppy.")
    await add(store, "Maria's hound barks.")
    found = await recall(store, embedder, "her dog", exclude_ids=[seed], limit=5)
    assert found == ["Maria's hound barks."]


def memory(id: int, *, age_days: float = 0.0, type: MemoryType = "fact", now: float = 100 * DAY) -> Memory:
    return Memory(id, type, f"m{id}", "ana", "k", None, 0.5, "owner", now - age_days * DAY)


def test_fusion_rewards_what_both_rankings_found() -> None:
    a, b, c = memory(1), memory(2), memory(3)
    fused = fuse([[a, b], [c, b]], now=100 * DAY, limit=3)
    assert [m.id for m in fused] == [2, 3, 1]  # b in both; c and a at rank 1 once, c newer by id
    assert fuse([[a, b], [c, b]], now=100 * DAY, limit=1) == [b]
    assert 1 / (RRF_K + 2) * 2 > 1 / (RRF_K + 1)


def test_recency_and_type_weigh_but_never_erase_an_old_best_match() -> None:
    now = 100 * DAY
    old, fresh = memory(1, age_days=365), memory(2)
    assert weight(fresh, now) == 1.0
    assert 0.75 <= weight(old, now) < 0.76
    assert [m.id for m in fuse([[old, fresh], [fresh]], now=now, limit=2)] == [2, 1]
    assert [m.id for m in fuse([[old], [old], [fresh]], now=now, limit=2)] == [1, 2]
    summary, fact = memory(3, type="summary"), memory(4)
    assert [m.id for m in fuse([[summary], [fact]], now=now, limit=2)] == [4, 3]
