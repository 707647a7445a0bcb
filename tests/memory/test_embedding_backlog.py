"""The background embedding of memories through a real gateway and the fake server's /embeddings."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from ishiki_host.config.models import ModelsConfig, ModelSpec
from ishiki_host.core.clock import FakeClock
from ishiki_host.gateway import Gateway
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.gateway.embeddings import Embedder, GatewayEmbeddings
from ishiki_host.memory.embedding import EmbeddingBacklog
from ishiki_host.store import MemoryStore
from ishiki_host.store.repos.memory_vectors import VectorCounts
from ishiki_host.testing import FakeOpenAIServer, Response

pytestmark = pytest.mark.anyio


@pytest.fixture
async def gateway(fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI]) -> AsyncIterator[Gateway]:
    config = ModelsConfig(
        providers={"local": fake_openai.provider("local", (ModelSpec("embed"), ModelSpec("embed-2")))}
    )
    async with Gateway(config, model_apis, clock=FakeClock()) as made:
        yield made


def embedder(gateway: Gateway, ref: str = "local:embed") -> Embedder:
    return GatewayEmbeddings(lambda: gateway)(ref)


async def add(store: MemoryStore, *texts: str) -> list[int]:
    return [(await store.memories.add("fact", t, profile="ana", runtime_key="k")).id for t in texts]


async def test_a_pass_embeds_every_memory_in_batches(
    store: MemoryStore, gateway: Gateway, fake_openai: FakeOpenAIServer
) -> None:
    await add(store, "one tea", "two coffee", "three cats", "four dogs", "five books")
    backlog = EmbeddingBacklog(store.vectors, embedder(gateway), "ana", batch=2)
    assert await backlog.status() == "embeddings: local:embed, 0 of 5 memories embedded (5 waiting)"
    assert await backlog.drain()
    assert [len(r.json["input"]) for r in fake_openai.embedding_requests] == [2, 2, 1]  # type: ignore[index]
    assert await store.vectors.counts("ana", "local:embed") == VectorCounts(5, 0)
    assert await backlog.status() == "embeddings: local:embed, 5 of 5 memories embedded"
    assert await backlog.drain()
    assert len(fake_openai.embedding_requests) == 3  # nothing left: no call


async def test_a_model_that_is_down_leaves_the_backlog_waiting_and_nothing_is_lost(
    store: MemoryStore, gateway: Gateway, fake_openai: FakeOpenAIServer
) -> None:
    await add(store, "one tea", "two coffee")
    fake_openai.embeddings_down()
    backlog = EmbeddingBacklog(store.vectors, embedder(gateway), "ana", retry_seconds=30)
    assert not await backlog.drain()
    assert backlog.problem is not None
    assert "local:embed is not answering" in backlog.problem
    assert backlog.retry_delay() == 30
    assert "(2 waiting); local:embed is not answering" in await backlog.status()
    assert await store.vectors.counts("ana", "local:embed") == VectorCounts(0, 2)
    assert await backlog.drain()  # it answers again
    assert backlog.problem is None
    assert backlog.retry_delay() is None
    assert await store.vectors.counts("ana", "local:embed") == VectorCounts(2, 0)


async def test_vectors_of_the_wrong_length_are_refused_and_no_row_is_written(
    store: MemoryStore, gateway: Gateway, fake_openai: FakeOpenAIServer
) -> None:
    await add(store, "one tea")
    backlog = EmbeddingBacklog(store.vectors, embedder(gateway), "ana")
    assert await backlog.drain()
    await add(store, "two coffee", "three cats")
    fake_openai.push_embeddings(fake_openai.embeddings_response([[0.5] * 64, [0.5] * 64]))
    assert not await backlog.drain()
    assert backlog.problem is not None
    assert "has 64 dimensions, but its other embeddings have 128; nothing of this batch was stored" in backlog.problem
    assert await store.vectors.counts("ana", "local:embed") == VectorCounts(1, 2)


async def test_a_memory_the_model_refuses_is_left_out_and_the_others_are_embedded(
    store: MemoryStore, gateway: Gateway, fake_openai: FakeOpenAIServer
) -> None:
    ids = await add(store, "a very long text", "one tea", "three cats")
    refused = fake_openai.error_body("input is too long", "invalid_request_error", 400)
    fake_openai.push_embeddings(Response.json(refused, 400), Response.json(refused, 400))
    backlog = EmbeddingBacklog(store.vectors, embedder(gateway), "ana")
    assert await backlog.drain()  # the batch, then one by one: the first of those refused
    assert await store.vectors.counts("ana", "local:embed") == VectorCounts(2, 1)
    assert [p.id for p in await store.vectors.pending("ana", "local:embed")] == [ids[0]]
    assert await backlog.drain()  # not asked again in this process
    assert len(fake_openai.embedding_requests) == 4


async def test_a_new_model_embeds_everything_again_then_drops_the_old_vectors(
    store: MemoryStore, gateway: Gateway
) -> None:
    await add(store, "one tea", "two coffee")
    backlog = EmbeddingBacklog(store.vectors, embedder(gateway), "ana")
    assert await backlog.drain()
    backlog.use(embedder(gateway, "local:embed-2"))
    assert await backlog.status() == "embeddings: local:embed-2, 0 of 2 memories embedded (2 waiting)"
    assert await backlog.drain()
    assert await store.vectors.counts("ana", "local:embed-2") == VectorCounts(2, 0)
    assert await store.vectors.counts("ana", "local:embed") == VectorCounts(0, 2)  # pruned


async def test_the_loop_runs_a_pass_on_each_kick(store: MemoryStore, gateway: Gateway) -> None:
    backlog = EmbeddingBacklog(store.vectors, embedder(gateway), "ana")
    async with anyio.create_task_group() as tg:
        assert backlog.claim_runner()
        tg.start_soon(backlog.run)
        await backlog.next_pass()
        assert not backlog.claim_runner()  # one runs
        await add(store, "one tea")
        backlog.kick()
        await backlog.next_pass()
        assert await store.vectors.counts("ana", "local:embed") == VectorCounts(1, 0)
        tg.cancel_scope.cancel()
    assert backlog.claim_runner()  # it stopped: the next caller starts one
