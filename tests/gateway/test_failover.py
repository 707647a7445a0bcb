"""Failover through the gateway: members in order, breakers, retry-after, backoff, streams."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import anyio
import pytest

from ishiki_host.config.models import GroupConfig, ModelsConfig
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, StreamDone, TextDelta
from ishiki_host.errors import ModelError
from ishiki_host.gateway import FailoverPolicy, Gateway, ModelCallRecord
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.testing import FakeAnthropicServer, FakeOpenAIServer

pytestmark = pytest.mark.anyio

ASK = ModelRequest((Message.user("hi"),))


@pytest.fixture
async def gateway(
    fake_openai: FakeOpenAIServer,
    fake_anthropic: FakeAnthropicServer,
    model_apis: dict[str, ModelAPI],
    fake_clock: FakeClock,
) -> AsyncIterator[Gateway]:
    """Group ``duo`` = [a:m (OpenAI fake), b:m (Anthropic fake)], strategy failover, seed 1."""
    config = ModelsConfig(
        providers={
            "a": fake_openai.provider("a", ("m",), timeout_seconds=0.3),
            "b": fake_anthropic.provider("b", ("m",)),
        },
        groups={"duo": GroupConfig("duo", ("a:m", "b:m"))},
    )
    async with Gateway(config, model_apis, clock=fake_clock, seed=1) as gw:
        yield gw


def record_calls(gateway: Gateway) -> list[ModelCallRecord]:
    records: list[ModelCallRecord] = []
    gateway.add_listener(records.append)
    return records


async def test_moves_to_the_next_member(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer
) -> None:
    records = record_calls(gateway)
    fake_openai.server_error(502)
    fake_anthropic.reply("from b")
    result = await gateway.model("duo").generate(ASK)
    assert (result.text, result.model) == ("from b", "b:m")
    assert [(r.member, r.error_kind) for r in records] == [("a:m", "unavailable"), ("b:m", None)]
    assert records[1].usage is not None
    assert records[1].ref == "duo"
    assert gateway.status()["members"]["a:m"]["failures"] == 1


async def test_a_hanging_member_times_out_and_fails_over(gateway: Gateway, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.hang()
    with anyio.fail_after(5):
        result = await gateway.model("duo").generate(ASK)
    assert result.model == "b:m"


async def test_breaker_skips_an_open_member_then_probes_it(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_clock: FakeClock
) -> None:
    model = gateway.model("duo")
    for _ in range(3):
        fake_openai.server_error()
        assert (await model.generate(ASK)).model == "b:m"
    assert gateway.status()["members"]["a:m"]["state"] == "open"
    before = len(fake_openai.requests)
    assert (await model.generate(ASK)).model == "b:m"
    assert len(fake_openai.requests) == before  # skipped, not called
    await fake_clock.advance(60)
    assert gateway.status()["members"]["a:m"]["state"] == "half_open"
    assert (await model.generate(ASK)).model == "a:m"  # the probe succeeds
    assert gateway.status()["members"]["a:m"]["state"] == "closed"


async def test_all_open_offers_all(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer
) -> None:
    model = gateway.model("duo", failover=FailoverPolicy(attempts=2))
    for _ in range(3):
        fake_openai.server_error()
        fake_anthropic.overloaded()
        with pytest.raises(ModelError):
            await model.generate(ASK)
    members = gateway.status()["members"]
    assert members["a:m"]["state"] == members["b:m"]["state"] == "open"
    assert (await model.generate(ASK)).model == "a:m"


async def test_rate_limited_single_member_waits_for_retry_after(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_clock: FakeClock
) -> None:
    fake_openai.rate_limit("3")
    fake_openai.reply("after the wait")
    results = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _append(results, gateway.model("a:m").generate(ASK)))
        await fake_clock.wait_for_sleepers()
        assert fake_clock.next_deadline() == fake_clock.now() + 3
        assert len(fake_openai.requests) == 1
        await fake_clock.advance(3)
    assert results[0].text == "after the wait"


async def _append(results: list[object], coro: object) -> None:
    results.append(await coro)  # type: ignore[misc]


async def test_too_long_retry_after_surfaces(gateway: Gateway, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.rate_limit("3600")
    with pytest.raises(ModelError) as info:
        await gateway.model("a:m").generate(ASK)
    assert info.value.kind == "rate_limited"
    assert len(fake_openai.requests) == 1


async def test_backoff_is_seeded_jittered_and_capped(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_clock: FakeClock
) -> None:
    policy = FailoverPolicy(attempts=4, backoff_ms=1000, backoff_cap_ms=3000)
    for _ in range(3):
        fake_openai.server_error()
    expected_rng = random.Random(1)
    expected = [min(3000, 1000 * 2**k) * (0.5 + 0.5 * expected_rng.random()) / 1000 for k in range(3)]
    results: list[object] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _append(results, gateway.model("a:m", failover=policy).generate(ASK)))
        for wait in expected:
            await fake_clock.wait_for_sleepers()
            assert fake_clock.next_deadline() == pytest.approx(fake_clock.now() + wait)
            await fake_clock.advance(wait)
    assert len(fake_openai.requests) == 4
    assert results[0].text == "ok"  # type: ignore[attr-defined]


async def test_attempts_bound_the_calls(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_openai.server_error(500)
    fake_anthropic.overloaded()
    with pytest.raises(ModelError) as info:
        await gateway.model("duo", failover=FailoverPolicy(attempts=2)).generate(ASK)
    assert info.value.model == "b:m"  # the last error is the one raised
    assert (len(fake_openai.requests), len(fake_anthropic.requests)) == (1, 1)


@pytest.mark.parametrize("failover_on", ["unavailable", "any"])
async def test_auth_errors_fail_over_only_with_any(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer, failover_on: str
) -> None:
    fake_openai.error(401, "bad key")
    model = gateway.model("duo", failover=FailoverPolicy(failover_on=failover_on))  # type: ignore[arg-type]
    if failover_on == "any":
        assert (await model.generate(ASK)).model == "b:m"
    else:
        with pytest.raises(ModelError) as info:
            await model.generate(ASK)
        assert info.value.kind == "auth"
        assert not fake_anthropic.requests


async def test_any_never_goes_back_to_a_member_that_refused(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_openai.error(400, "bad tool schema")
    fake_anthropic.overloaded()
    with pytest.raises(ModelError) as info:
        await gateway.model("duo", failover=FailoverPolicy(attempts=2, failover_on="any")).generate(ASK)
    assert info.value.kind == "unavailable"
    assert len(fake_openai.requests) == 1  # not retried for a bad request


async def test_context_length_never_fails_over(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_openai.context_length()
    with pytest.raises(ModelError) as info:
        await gateway.model("duo", failover=FailoverPolicy(failover_on="any")).generate(ASK)
    assert info.value.kind == "context_length"
    assert not fake_anthropic.requests


async def test_stream_fails_over_before_content(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_openai.server_error()
    fake_anthropic.reply("streamed by b")
    events = [e async for e in gateway.model("duo").stream(ASK)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "streamed by b"
    assert isinstance(events[-1], StreamDone)
    assert events[-1].result.model == "b:m"


async def test_stream_does_not_retry_after_content(
    gateway: Gateway, fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_openai.cut()
    seen: list[object] = []

    async def consume() -> None:
        async for event in gateway.model("duo").stream(ASK):
            seen.append(event)

    with pytest.raises(ModelError) as info:
        await consume()
    assert info.value.kind == "unavailable"
    assert any(isinstance(e, TextDelta) for e in seen)
    assert not fake_anthropic.requests


def test_policy_from_mapping_and_validation() -> None:
    policy = FailoverPolicy.from_mapping({"attempts": 5, "backoff_ms": 100, "failover_on": "any"})
    assert (policy.attempts, policy.backoff_ms, policy.failover_on, policy.backoff_cap_ms) == (5, 100, "any", 8000)
    with pytest.raises(ValueError, match="at least 1"):
        FailoverPolicy(attempts=0)
    with pytest.raises(ValueError, match="failover_on"):
        FailoverPolicy(failover_on="sometimes")  # type: ignore[arg-type]
    assert FailoverPolicy(backoff_ms=500).backoff_seconds(10, random.Random(0)) <= 8
