"""Memory embeddings on SQLite: put and the backlog, the dimension check, the hash index, filters, pruning."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from ishiki_host.errors import StoreError
from ishiki_host.store import MemoryDraft, MemoryStore
from ishiki_host.store.repos.memory_search import SearchFilter
from ishiki_host.store.repos.memory_types import MemoryScope
from ishiki_host.store.repos.memory_vectors import VectorCounts
from ishiki_host.store.vectors import BITS, TARGET, decode, encode, prefix_bits, prefix_range, signatures
from ishiki_host.testing.embeddings import ConceptEmbedder

pytestmark = pytest.mark.anyio

RUNTIME = "alice/console:local/private:local"
MODEL = "local:embed"
KIT = ConceptEmbedder(32)


def where(limit: int = 5, **kw: object) -> SearchFilter:
    fields: dict[str, object] = {"readable": ("untrusted", "trusted", "owner"), **kw}
    return SearchFilter("alice", ("summary", "fact", "lesson"), limit=limit, **fields)  # type: ignore[arg-type]


async def add(store: MemoryStore, content: str, **kw: object) -> int:
    memory = await store.memories.add("fact", content, profile="alice", runtime_key=RUNTIME, **kw)  # type: ignore[arg-type]
    return memory.id


async def embed_all(store: MemoryStore, model: str = MODEL) -> int:
    pending = await store.vectors.pending("alice", model, limit=10_000)
    return await store.vectors.put("alice", model, [(p.id, KIT.vector(p.content)) for p in pending])


async def test_the_backlog_is_what_has_no_vector_of_the_model(store: MemoryStore) -> None:
    first = await add(store, "Maria adopted a puppy")
    second = await add(store, "Tom is allergic to peanuts")
    assert [p.id for p in await store.vectors.pending("alice", MODEL)] == [first, second]
    assert [p.id for p in await store.vectors.pending("alice", MODEL, after=first)] == [second]
    assert await store.vectors.put("alice", MODEL, [(first, KIT.vector("Maria adopted a puppy"))]) == 1
    assert [p.content for p in await store.vectors.pending("alice", MODEL)] == ["Tom is allergic to peanuts"]
    assert await store.vectors.counts("alice", MODEL) == VectorCounts(1, 1)
    assert [p.id for p in await store.vectors.pending("alice", "other:model")] == [first, second]


async def test_nearest_finds_the_paraphrase(store: MemoryStore) -> None:
    await add(store, "Maria adopted a puppy named Biscuit")
    await add(store, "Tom is allergic to peanuts")
    await add(store, "The tax office sent a letter")
    await embed_all(store)
    hits = await store.vectors.nearest(MODEL, KIT.vector("how is her dog?"), where(2))
    assert next(h.memory.content for h in hits) == "Maria adopted a puppy named Biscuit"
    assert len(hits) == 2
    assert hits[0].similarity > hits[1].similarity


async def test_a_vector_of_another_length_is_refused_and_nothing_is_written(store: MemoryStore) -> None:
    a, b, c = [await add(store, text) for text in ("one tea", "two coffee", "three cats")]
    await store.vectors.put("alice", MODEL, [(a, KIT.vector("one tea"))])
    with pytest.raises(StoreError, match=rf"memory {c}: the embedding from {MODEL} has 31 dimensions, but its other"):
        await store.vectors.put("alice", MODEL, [(b, KIT.vector("two coffee")), (c, [0.1] * 31)])
    assert [p.id for p in await store.vectors.pending("alice", MODEL)] == [b, c]
    with pytest.raises(StoreError, match=r"query embedding .* 16 dimensions, its memories. have 32"):
        await store.vectors.nearest(MODEL, [0.5] * 16, where())


async def test_the_filters_of_full_text_search_hold(store: MemoryStore) -> None:
    await add(store, "the owner's dog is ill", min_trust="owner", chats=("fake:bot private:1",))
    await add(store, "the trusted puppy barks", min_trust="trusted", chats=("fake:bot private:2",))
    await embed_all(store)
    query = KIT.vector("dog")
    trusted = where(readable=("untrusted", "trusted"))
    assert [h.memory.content for h in await store.vectors.nearest(MODEL, query, trusted)] == ["the trusted puppy barks"]
    scoped = where(scope=MemoryScope("sender", RUNTIME, ("fake:bot private:1",)))
    assert [h.memory.content for h in await store.vectors.nearest(MODEL, query, scoped)] == ["the owner's dog is ill"]
    other = SearchFilter("bob", ("fact",), ("owner",))
    assert await store.vectors.nearest(MODEL, query, other) == []


async def test_deleting_a_memory_deletes_its_vector_and_prune_drops_old_models(store: MemoryStore) -> None:
    a = await add(store, "tea at five")
    b = await add(store, "coffee at nine")
    c = await add(store, "rain at noon")
    await embed_all(store, "old:model")
    await store.vectors.put("alice", MODEL, [(b, KIT.vector("coffee at nine")), (c, KIT.vector("rain at noon"))])
    assert await store.vectors.counts("alice", MODEL) == VectorCounts(2, 1)  # a new vector replaces the old
    assert await store.memories.delete(c)
    store.vectors.forget_counts()
    assert await store.vectors.counts("alice", MODEL) == VectorCounts(1, 1)
    assert await store.vectors.prune("alice", MODEL) == 1  # a's vector of the old model
    assert await store.vectors.counts("alice", "old:model") == VectorCounts(0, 2)
    assert [p.id for p in await store.vectors.pending("alice", MODEL)] == [a]
    assert [h.memory.id for h in await store.vectors.nearest(MODEL, KIT.vector("coffee"), where())] == [b]
    assert await store.vectors.nearest("old:model", KIT.vector("tea"), where()) == []


async def test_put_skips_a_memory_deleted_or_of_another_profile(store: MemoryStore) -> None:
    a = await add(store, "tea")
    bob = await store.memories.add("fact", "bob's tea", profile="bob", runtime_key="bob/x/y")
    await store.memories.delete(a)
    assert await store.vectors.put("alice", MODEL, [(a, KIT.vector("tea")), (bob.id, KIT.vector("tea"))]) == 0


async def test_the_index_reads_a_bounded_set_of_candidates(store: MemoryStore, db_path: Path) -> None:
    """With many rows each query reads about BANDS x TARGET candidates, and still finds a near row."""
    rng = random.Random(7)
    texts = [f"note {i} " + " ".join(rng.choice(WORDS) for _ in range(4)) for i in range(600)]
    ids = await store.memories.add_many([_draft(t) for t in texts])
    await store.vectors.put("alice", MODEL, [(i, KIT.vector(t)) for i, t in zip(ids, texts, strict=True)])
    bits = prefix_bits(600)
    assert bits == 4
    hits = await store.vectors.nearest(MODEL, KIT.vector(texts[42]), where(1))
    assert hits[0].memory.id == ids[42]
    with sqlite3.connect(db_path) as conn:
        sig = signatures(KIT.vector(texts[42]))
        read = set()
        for band, s in enumerate(sig):
            low, high = prefix_range(s, bits)
            rows = conn.execute(
                "SELECT memory_id FROM memory_vector_bands WHERE band = ? AND signature BETWEEN ? AND ?",
                (band, low, high),
            )
            read.update(r[0] for r in rows)
    assert len(read) < 600 // 2  # far from a scan


def test_signatures_and_ranges() -> None:
    vector = KIT.vector("my puppy")
    assert signatures(vector) == signatures(list(vector))
    assert all(0 <= s < 2**BITS for s in signatures(vector))
    assert prefix_bits(TARGET) == 0
    assert prefix_bits(TARGET * 8) == 3
    assert prefix_bits(10**12) == BITS
    assert prefix_range(0b1011_0000_0000_0001, 4) == (0b1011 << 12, (0b1011 << 12) + 4095)
    assert prefix_range(12345, 0) == (0, 2**BITS - 1)
    assert decode(encode([0.5, -1.0])) == (0.5, -1.0)


WORDS = [
    "tea",
    "coffee",
    "dog",
    "cat",
    "garden",
    "rain",
    "book",
    "film",
    "trip",
    "city",
    "exam",
    "piano",
    "chess",
    "car",
    "bike",
    "money",
]


def _draft(text: str) -> MemoryDraft:
    return MemoryDraft("fact", text, "alice", RUNTIME)


async def test_the_vectors_held_in_memory_follow_the_writes(store: MemoryStore) -> None:
    """The first query loads the model's vectors; later puts, re-embeddings, deletions and prunes are seen."""
    a = await add(store, "Maria adopted a puppy")
    await embed_all(store)
    dog = KIT.vector("her dog")
    assert [h.memory.id for h in await store.vectors.nearest(MODEL, dog, where())] == [a]  # loaded
    b = await add(store, "Tom walks his hound")
    await embed_all(store)
    assert {h.memory.id for h in await store.vectors.nearest(MODEL, dog, where())} == {a, b}
    await store.vectors.put("alice", "new:model", [(a, KIT.vector("Maria adopted a puppy"))])
    assert [h.memory.id for h in await store.vectors.nearest(MODEL, dog, where())] == [b]  # a moved on
    assert await store.memories.delete(b)
    assert await store.vectors.nearest(MODEL, dog, where()) == []
    c = await add(store, "a kitten at the door")  # may reuse b's id: it has no vector yet
    assert await store.vectors.nearest(MODEL, dog, where()) == []
    await store.vectors.put("alice", MODEL, [(c, KIT.vector("a kitten at the door"))])
    assert [h.memory.id for h in await store.vectors.nearest(MODEL, KIT.vector("kitty"), where(1))] == [c]
    assert await store.vectors.prune("alice", "new:model") == 1
    assert await store.vectors.nearest(MODEL, dog, where()) == []
