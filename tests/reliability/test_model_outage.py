"""The model server answers 500 for 30 s (fake time), then recovers: the breaker opens, the fallback member
answers meanwhile, the breaker closes again, and no turn is lost.

A real host (fake channel, test engines) whose model is a failover group of two loopback OpenAI servers: the
primary answers 500 while the fake clock is inside the outage, the fallback always answers. Both answer as the
crash harness's rational model (``ack <token>`` for each message token not yet acknowledged).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, Response, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

OUTAGE = 30.0
COOLDOWN = 10.0


@pytest.fixture
def fallback() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def group(primary: FakeOpenAIServer, fallback: FakeOpenAIServer) -> str:
    providers = "".join(
        f"  {name}:\n    api: openai-completions\n    base_url: {server.base_url}\n    models: [{{id: m}}]\n"
        for name, server in (("primary", primary), ("fallback", fallback))
    )
    breaker = f"{{failure_threshold: 2, cooldown_seconds: {COOLDOWN}}}"
    members = "    models: [primary:m, fallback:m]\n"
    return f"providers:\n{providers}groups:\n  default:\n{members}    circuit_breaker: {breaker}\n"


async def test_an_outage_opens_the_breaker_the_fallback_answers_and_the_breaker_closes(
    make_host: MakeHost,
    fake_openai: FakeOpenAIServer,
    fallback: FakeOpenAIServer,
    rational_model: Any,
    fake_clock: FakeClock,
    log_watch: Any,
) -> None:
    primary = fake_openai
    outage: list[float] = []  # [start, end] in fake time, once it began

    def primary_answer(request: RecordedRequest) -> Reply | Response:
        if outage and outage[0] <= fake_clock.now() < outage[1]:
            return Response.json({"error": {"message": "The server had an error", "type": "server_error"}}, 500)
        return rational_model(request)

    primary.default = primary_answer
    fallback.default = rational_model
    th = make_host(profiles={"ana": profile_yaml()}, models=group(primary, fallback), clock=fake_clock)
    async with th:
        bot = th.channel()
        breaker = th.host.gateways.gateway.breakers["primary:m"]
        states: list[str] = []
        served: list[tuple[int, int]] = []

        async def say(token: str) -> None:
            before = (len(primary.requests), len(fallback.requests))
            delivery = await bot.say(f"hello {token}", channel_id="private:7")
            with anyio.fail_after(10):
                await delivery.settled()
            states.append(breaker.state)
            served.append((len(primary.requests) - before[0], len(fallback.requests) - before[1]))

        await say("q7x1")
        outage[:] = [fake_clock.now(), fake_clock.now() + OUTAGE]
        for seq in range(2, 6):
            await say(f"q7x{seq}")
        await fake_clock.advance(COOLDOWN)  # half open: the next call probes the primary, still failing
        await say("q7x6")
        await fake_clock.advance(OUTAGE)  # the outage is over and the cooldown passed: the probe succeeds
        await say("q7x7")
        await say("q7x8")

    assert states == ["closed", "closed", "open", "open", "open", "open", "closed", "closed"]
    assert served == [(1, 0), (1, 1), (1, 1), (0, 1), (0, 1), (1, 1), (1, 0), (1, 0)]
    assert sorted(bot.texts()) == sorted(f"ack q7x{seq}" for seq in range(1, 9))  # every turn answered, once
    assert log_watch.count("breaker primary:m: closed -> open") == 1
    assert log_watch.count("breaker primary:m: half_open -> open (the probe failed") == 1
    assert log_watch.count("breaker primary:m: half_open -> closed") == 1
    assert log_watch.count("primary:m is not answering") == 1  # the failover is said once, not per call
