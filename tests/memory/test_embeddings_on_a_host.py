"""The real path on a real Host: a memory is embedded through the fake server's /embeddings after the turn
that made it, and a later turn that shares no word with it recalls it; /status shows the backlog."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from ishiki_host.core.shared import ServiceKey
from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.memory.embedding import EmbeddingBacklog
from ishiki_host.memory.retrieval import MEMORY_HEADER
from ishiki_host.testing import FakeConnection, FakeOpenAIServer, MakeHost, Reply, profile_yaml
from ishiki_host.testing.host import TestHost
from tests.sessions.conftest import Router, _settle

pytestmark = pytest.mark.anyio

EMBEDDINGS = "extends: {memory: {config: {embeddings: 'fake:fake-model'}}}\n"
BACKLOG = ServiceKey("ishiki.memory.embeddings/ana", EmbeddingBacklog)


def host_with_embeddings(make_host: MakeHost, router: Router, extra: str = EMBEDDINGS) -> TestHost:
    profile = profile_yaml(summarizer=None, extra="session: {summarizer: auto}\n" + extra)
    return make_host(profiles={"ana": profile})


async def embedded(th: TestHost) -> EmbeddingBacklog:
    backlog = th.host.services.get(BACKLOG)
    assert backlog is not None
    with anyio.fail_after(10):
        while (await backlog.vectors.counts("ana", backlog.model)).pending:
            await backlog.next_pass()
    return backlog


async def exchange(channel: FakeConnection, text: str) -> None:
    """Say ``text`` and wait until its turn and the work after it are done."""
    delivery = await channel.say(text)
    assert isinstance(delivery, RuntimeDelivery)
    await _settle(delivery.runtime)


def system_prompt(body: Any) -> str:
    return str(body["messages"][0]["content"])


@pytest.fixture
def router(fake_openai: FakeOpenAIServer) -> Router:
    routed = Router()
    fake_openai.default = routed
    return routed


async def test_a_paraphrase_is_recalled_in_a_later_turn(
    make_host: MakeHost, router: Router, fake_openai: FakeOpenAIServer
) -> None:
    router.memories.append(Reply(json.dumps({"type": "fact", "content": "Maria adopted a puppy named Biscuit."})))
    async with host_with_embeddings(make_host, router) as th:
        channel = th.channel()
        await exchange(channel, "guess what Biscuit did")
        backlog = await embedded(th)
        assert backlog.model == "fake:fake-model"
        inputs = [r.json["input"] for r in fake_openai.embedding_requests]  # type: ignore[index]
        assert ["Maria adopted a puppy named Biscuit."] in inputs
        await channel.say("/clear")  # a new session: the last one's memories are no longer in the window
        await exchange(channel, "how is my dog?")
        prompt = system_prompt(router.requests()[-1])
        assert MEMORY_HEADER in prompt
        assert "Maria adopted a puppy named Biscuit." in prompt
        queries = [r.json for r in fake_openai.embedding_requests if "how is my dog?" in str(r.json)]
        assert len(queries) == 1  # the turn's search text, once
        await embedded(th)  # the second exchange's memory
        await channel.say("/status")
        assert any("embeddings: fake:fake-model, 2 of 2 memories embedded" in t for t in channel.texts())


async def test_an_embeddings_model_that_is_down_leaves_full_text_recall(
    make_host: MakeHost, router: Router, fake_openai: FakeOpenAIServer
) -> None:
    router.memories.append(Reply(json.dumps({"type": "fact", "content": "Maria adopted a puppy named Biscuit."})))
    fake_openai.embeddings_down(times=100)
    async with host_with_embeddings(make_host, router) as th:
        channel = th.channel()
        await exchange(channel, "guess what Biscuit did")
        await channel.say("/clear")
        await exchange(channel, "where is Biscuit now?")
        assert "Maria adopted a puppy named Biscuit." in system_prompt(router.requests()[-1])  # by its word
        await channel.say("/status")
        status = "\n".join(channel.texts())
        assert "embeddings: fake:fake-model, 0 of 2 memories embedded (2 waiting)" in status
        assert "is not answering" in status


async def test_an_embeddings_model_that_models_yaml_does_not_name_is_said_in_status(
    make_host: MakeHost, router: Router
) -> None:
    unknown = "extends: {memory: {config: {embeddings: 'fake:no-such-model'}}}\n"
    async with host_with_embeddings(make_host, router, unknown) as th:
        channel = th.channel()
        await channel.say("/status")
        status = "\n".join(channel.texts())
        assert "embeddings model 'fake:no-such-model' is unknown" in status
        assert "recall uses full text" in status
