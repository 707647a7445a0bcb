"""Per-member statistics in ``Gateway.status()``: latency percentiles of successful calls, errors by kind, calls
and tokens, beside the breaker's keys; the ring of latencies is bounded."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
import pytest

from ishiki_host.config.models import GroupConfig, ModelPrice, ModelsConfig, ModelSpec
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, StreamDone, Usage
from ishiki_host.errors import ModelError
from ishiki_host.gateway import FailoverPolicy, Gateway, models_report
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.gateway.stats import MemberStats, percentile
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, Response

pytestmark = pytest.mark.anyio

ASK = ModelRequest((Message.user("hi"),))
ONCE = FailoverPolicy(attempts=1)


class SteppedClock:
    """A clock that moves only by ``step``, which the fake server's thread calls while a request is in flight
    (the gateway reads the clock before sending and after the answer, so the latency is exactly the step)."""

    def __init__(self) -> None:
        self.time = 1_700_000_000.0

    def now(self) -> float:
        return self.time

    def monotonic(self) -> float:
        return self.time - 1_700_000_000.0

    async def sleep(self, seconds: float) -> None:
        self.time += seconds
        await anyio.lowlevel.checkpoint()

    def step(self, seconds: float) -> None:
        self.time += seconds


def taking(
    clock: SteppedClock, seconds: float, answer: Reply | Response
) -> Callable[[RecordedRequest], Reply | Response]:
    """An answer of the fake server that takes ``seconds`` of the clock."""

    def answer_after(_: RecordedRequest) -> Reply | Response:
        clock.step(seconds)
        return answer

    return answer_after


@pytest.fixture
def clock() -> SteppedClock:
    return SteppedClock()


@pytest.fixture
async def gateway(
    fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI], clock: SteppedClock
) -> AsyncIterator[Gateway]:
    """``a:m`` and ``a:n`` on the OpenAI fake, group ``g`` = [a:m]."""
    config = ModelsConfig(
        providers={"a": fake_openai.provider("a", ("m", "n"))}, groups={"g": GroupConfig("g", ("a:m",))}
    )
    async with Gateway(config, model_apis, clock=clock, seed=1) as gw:
        yield gw


async def test_latency_percentiles_come_from_the_successful_calls(
    gateway: Gateway, fake_openai: FakeOpenAIServer, clock: SteppedClock
) -> None:
    for tenth in range(10, 0, -1):  # 1.0 s down to 0.1 s: the order of the calls does not matter
        fake_openai.push(taking(clock, tenth / 10, Reply("ok", usage=(100, 7))))
    for _ in range(10):
        await gateway.model("a:m").generate(ASK)
    member = gateway.status()["members"]["a:m"]
    assert member["latency"] == {"p50": 0.5, "p95": 1.0, "samples": 10}
    assert (member["calls"], member["tokens"], member["errors"]) == (10, {"input": 1000, "output": 70}, {})


async def test_errors_are_counted_by_kind_and_leave_the_latency_alone(
    gateway: Gateway, fake_openai: FakeOpenAIServer, clock: SteppedClock
) -> None:
    fake_openai.push(taking(clock, 0.25, Reply("ok")))
    await gateway.model("a:m").generate(ASK)
    fake_openai.server_error(502)
    fake_openai.push(taking(clock, 30.0, Response(status=503)))
    fake_openai.rate_limit()
    fake_openai.error(400, "bad")
    for _ in range(4):
        with pytest.raises(ModelError):
            await gateway.model("a:m", failover=ONCE).generate(ASK)
    member = gateway.status()["members"]["a:m"]
    assert member["errors"] == {"bad_request": 1, "rate_limited": 1, "unavailable": 2}
    assert member["latency"] == {"p50": 0.25, "p95": 0.25, "samples": 1}
    assert member["calls"] == 5
    assert member["tokens"] == {"input": 10, "output": 5}


async def test_the_breaker_keys_stay_and_an_unused_member_reads_empty(
    gateway: Gateway, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.server_error(500)
    with pytest.raises(ModelError):
        await gateway.model("g", failover=ONCE).generate(ASK)
    members = gateway.status()["members"]
    assert {"member", "state", "failures", "probe_in_seconds", "last_error"} <= set(members["a:m"])
    assert members["a:m"]["failures"] == 1  # the breaker's consecutive failures, not the error counts
    assert members["a:n"] == {
        "member": "a:n",
        "state": "closed",
        "failures": 0,
        "probe_in_seconds": None,
        "last_error": None,
        "calls": 0,
        "tokens": {"input": 0, "output": 0},
        "errors": {},
        "latency": {"p50": None, "p95": None, "samples": 0},
    }


async def test_streamed_calls_and_probes_count_too(
    gateway: Gateway, fake_openai: FakeOpenAIServer, clock: SteppedClock
) -> None:
    fake_openai.push(taking(clock, 2.0, Reply("streamed", usage=(3, 2))))
    events = [event async for event in gateway.model("a:n").stream(ASK)]
    assert isinstance(events[-1], StreamDone)
    fake_openai.push(taking(clock, 4.0, Reply("OK")))
    assert (await gateway.probe("a:n")).ok
    member = gateway.status()["members"]["a:n"]
    assert member["latency"] == {"p50": 2.0, "p95": 4.0, "samples": 2}
    assert member["calls"] == 2


def test_the_ring_keeps_the_latest_samples_only() -> None:
    stats = MemberStats(samples=4)
    for seconds in (9.0, 9.0, 1.0, 2.0, 3.0, 4.0):
        stats.note(seconds, Usage(1, 1), None)
    stats.note(60.0, None, "unavailable")
    assert stats.status()["latency"] == {"p50": 2.0, "p95": 4.0, "samples": 4}
    assert stats.status()["calls"] == 7
    assert stats.status()["tokens"] == {"input": 6, "output": 6}


def test_percentile_is_the_nearest_rank() -> None:
    assert percentile([], 0.5) is None
    assert percentile([7.0], 0.95) == 7.0
    ordered = [float(n) for n in range(1, 101)]
    assert (percentile(ordered, 0.5), percentile(ordered, 0.95), percentile(ordered, 1.0)) == (50.0, 95.0, 100.0)


async def test_the_models_report_shows_prices_and_the_member_statistics(
    fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI], clock: SteppedClock
) -> None:
    priced = ModelSpec("m", price=ModelPrice(input=2.5, output=10, cached_input=1.25))
    config = ModelsConfig(providers={"a": fake_openai.provider("a", (priced, "n"))})
    async with Gateway(config, model_apis, clock=clock) as gateway:
        fake_openai.push(taking(clock, 0.5, Reply("ok")))
        await gateway.model("a:m").generate(ASK)
        report = await models_report(config, gateway, probe=False)
    models = {m["ref"]: m for m in report["models"]}
    assert models["a:m"]["price"] == {"input": 2.5, "output": 10, "cached_input": 1.25, "currency": "USD"}
    assert models["a:n"]["price"] is None
    assert models["a:m"]["breaker"]["latency"] == {"p50": 0.5, "p95": 0.5, "samples": 1}
