"""Embeddings through the gateway: the OpenAI-compatible /embeddings call, groups, breakers, priority, checks."""

from __future__ import annotations

import math

import pytest

from ishiki_host.config.models import GroupConfig, ModelsConfig, ModelSpec
from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import ModelBadRequest, ModelsConfigInvalid, ModelUnavailable
from ishiki_host.gateway import FailoverPolicy, Gateway, ModelCallRecord
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.gateway.embeddings import MAX_EMBED_CHARS, embedding_model
from ishiki_host.testing import FakeAnthropicServer, FakeOpenAIServer
from ishiki_host.testing.embeddings import ConceptEmbedder

pytestmark = pytest.mark.anyio


def two_servers(a: FakeOpenAIServer, b: FakeOpenAIServer) -> ModelsConfig:
    return ModelsConfig(
        providers={"a": a.provider("a", (ModelSpec("embed"),)), "b": b.provider("b", (ModelSpec("embed"),))},
        groups={"vectors": GroupConfig("vectors", ("a:embed", "b:embed"))},
    )


async def test_embed_returns_the_servers_vectors_in_order(
    fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI]
) -> None:
    config = ModelsConfig(providers={"local": fake_openai.provider("local", (ModelSpec("nomic"),))})
    records: list[ModelCallRecord] = []
    async with Gateway(config, model_apis, clock=FakeClock()) as gateway:
        gateway.add_listener(records.append)
        model = embedding_model(gateway, "local:nomic")
        result = await model.embed(["my puppy", "her dog", "a tax form"])
    kit = ConceptEmbedder()
    assert result.model == "local:nomic"
    assert result.dimensions == kit.dimensions
    assert [list(v) for v in result.vectors] == [kit.vector(t) for t in ("my puppy", "her dog", "a tax form")]
    request = fake_openai.embedding_requests[-1]
    assert request.path == "/v1/embeddings"
    assert request.json == {"model": "nomic", "input": ["my puppy", "her dog", "a tax form"]}
    assert [(r.member, r.priority, r.error_kind) for r in records] == [("local:nomic", "background", None)]
    assert model.name == "local:nomic"


async def test_the_concept_embedder_places_paraphrases_near() -> None:
    kit = ConceptEmbedder()

    def cosine(x: str, y: str) -> float:
        return sum(p * q for p, q in zip(kit.vector(x), kit.vector(y), strict=True))

    assert cosine("Maria adopted a puppy", "How is her dog doing?") > 0.3
    assert cosine("Maria adopted a puppy", "the tax office called") < 0.3
    assert math.isclose(sum(x * x for x in kit.vector("my puppy")), 1.0)
    assert kit.vector("the and of") == [0.0] * kit.dimensions


async def test_a_group_fails_over_and_the_breaker_opens(model_apis: dict[str, ModelAPI]) -> None:
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        a.embeddings_down(times=10)
        async with Gateway(two_servers(a, b), model_apis, clock=FakeClock()) as gateway:
            model = embedding_model(gateway, "vectors")
            for _ in range(3):
                assert (await model.embed(["tea"])).model == "b:embed"
            assert gateway.breakers["a:embed"].status()["state"] == "open"
            await model.embed(["coffee"])
        assert len(a.embedding_requests) == 3
        assert len(b.embedding_requests) == 4


async def test_an_embeddings_model_that_is_down_raises_unavailable(
    fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI]
) -> None:
    fake_openai.embeddings_down(times=5)
    config = ModelsConfig(providers={"local": fake_openai.provider("local", (ModelSpec("embed"),))})
    async with Gateway(config, model_apis, clock=FakeClock()) as gateway:
        model = embedding_model(gateway, "local:embed", failover=FailoverPolicy(attempts=1))
        with pytest.raises(ModelUnavailable):
            await model.embed(["tea"])


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ([[0.1, 0.2], [0.3]], "different lengths"),
        ([[0.1, 0.2]], "expected 2 embeddings"),
        ([[0.1, "x"], [0.3, 0.4]], "not a list of numbers"),
    ],
)
async def test_malformed_embeddings_are_refused(
    fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI], vectors: list[list[float]], message: str
) -> None:
    fake_openai.push_embeddings(fake_openai.embeddings_response(vectors))
    config = ModelsConfig(providers={"local": fake_openai.provider("local", (ModelSpec("embed"),))})
    async with Gateway(config, model_apis, clock=FakeClock()) as gateway:
        with pytest.raises(ModelBadRequest, match=message):
            await embedding_model(gateway, "local:embed").embed(["one", "two"])


async def test_a_text_too_long_is_cut_before_it_is_sent(
    fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI]
) -> None:
    config = ModelsConfig(providers={"local": fake_openai.provider("local", (ModelSpec("embed"),))})
    async with Gateway(config, model_apis, clock=FakeClock()) as gateway:
        await embedding_model(gateway, "local:embed").embed(["x" * (MAX_EMBED_CHARS + 500)])
    body = fake_openai.embedding_requests[-1].json
    assert isinstance(body, dict)
    assert len(body["input"][0]) == MAX_EMBED_CHARS


async def test_a_provider_without_embeddings_says_so(
    fake_anthropic: FakeAnthropicServer, model_apis: dict[str, ModelAPI]
) -> None:
    config = ModelsConfig(providers={"claude": fake_anthropic.provider("claude", (ModelSpec("sonnet"),))})
    async with Gateway(config, model_apis, clock=FakeClock()) as gateway:
        with pytest.raises(ModelBadRequest, match="serves no embeddings"):
            await embedding_model(gateway, "claude:sonnet").embed(["tea"])
        with pytest.raises(ModelsConfigInvalid, match="unknown model"):
            embedding_model(gateway, "nope:embed")
