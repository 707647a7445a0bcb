"""A provider's httpx clients: how many, and which one each call goes to (the fewest calls in flight)."""

from __future__ import annotations

import anyio
import httpx
import pytest

from ishiki_host.config.models import ModelsConfig, ModelSpec, ProviderConfig
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.gateway import Gateway
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.gateway.pools import POOL_SIZE, HttpClients, ProviderPool, make_pool

pytestmark = pytest.mark.anyio

ASK = ModelRequest((Message.user("hi"),))
ANSWER = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}


def provider(max_concurrency: int) -> ProviderConfig:
    return ProviderConfig(
        "p", "openai-completions", "http://api.invalid/v1", models=(ModelSpec("m"),), max_concurrency=max_concurrency
    )


def pool_of(model_apis: dict[str, ModelAPI], max_concurrency: int) -> ProviderPool:
    made = make_pool(
        provider(max_concurrency),
        model_apis,
        HttpClients(),
        transport=httpx.MockTransport(lambda r: httpx.Response(200, json=ANSWER)),
        config_dir=None,
    )
    assert isinstance(made, ProviderPool)
    return made


async def test_one_client_per_pool_size_slots(model_apis: dict[str, ModelAPI]) -> None:
    assert len(pool_of(model_apis, 1).clients) == 1
    assert len(pool_of(model_apis, POOL_SIZE).clients) == 1
    assert len(pool_of(model_apis, POOL_SIZE + 1).clients) == 2
    assert len(pool_of(model_apis, 16 * POOL_SIZE).clients) == 16


async def test_each_call_goes_to_the_client_with_the_fewest_in_flight(model_apis: dict[str, ModelAPI]) -> None:
    pool = pool_of(model_apis, 2 * POOL_SIZE)
    leases = [pool.acquire() for _ in range(2 * POOL_SIZE)]
    assert pool.in_flight == [POOL_SIZE, POOL_SIZE]
    assert {client for _, client in leases} == set(pool.clients)
    # Calls on the first client end first: the next calls go there, not to the next client in turn.
    pool.release(0)
    pool.release(0)
    assert [pool.acquire()[0] for _ in range(2)] == [0, 0]
    assert pool.in_flight == [POOL_SIZE, POOL_SIZE]
    with pool.lease() as client:
        assert client is pool.clients[0]
        assert pool.in_flight == [POOL_SIZE + 1, POOL_SIZE]
    assert pool.in_flight == [POOL_SIZE, POOL_SIZE]


async def test_a_client_never_has_more_calls_than_its_pool_keeps(model_apis: dict[str, ModelAPI]) -> None:
    """The scheduler holds calls to max_concurrency; spread by load, no client gets more than POOL_SIZE."""
    arrived = 0
    all_in = anyio.Event()
    go = anyio.Event()

    async def answer(request: httpx.Request) -> httpx.Response:
        nonlocal arrived
        arrived += 1
        if arrived == 2 * POOL_SIZE:
            all_in.set()
        await go.wait()
        return httpx.Response(200, json=ANSWER)

    config = ModelsConfig(providers={"p": provider(2 * POOL_SIZE)})
    async with Gateway(config, model_apis, transport=httpx.MockTransport(answer)) as gateway:
        pool = gateway._providers["p"]
        model = gateway.model("p:m")
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for _ in range(3 * POOL_SIZE):  # more calls than slots: the rest wait for the scheduler
                    tg.start_soon(model.generate, ASK)
                await all_in.wait()
                assert pool.in_flight == [POOL_SIZE, POOL_SIZE]
                go.set()
        assert pool.in_flight == [0, 0]
        assert pool.calls == 3 * POOL_SIZE
