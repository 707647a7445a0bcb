"""The gateway's slot seam: calls take their slots from the ``SlotSource`` given (as a worker's gateway takes them
from its supervisor's scheduler), so gateways sharing one source share one ``max_concurrency``."""

from __future__ import annotations

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from ishiki_host.config.models import ModelsConfig, ModelSpec
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.gateway import Gateway
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.gateway.scheduler import Scheduler
from ishiki_host.testing import FakeOpenAIServer

pytestmark = pytest.mark.anyio

ASK = ModelRequest((Message.user("hi"),))


def config(fake_openai: FakeOpenAIServer, limit: int) -> ModelsConfig:
    return ModelsConfig(
        providers={"local": fake_openai.provider("local", (ModelSpec("llama"),), max_concurrency=limit)}
    )


async def test_a_call_waits_for_a_slot_of_the_source_given(
    fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI]
) -> None:
    shared = Scheduler(FakeClock())
    async with Gateway(config(fake_openai, 1), model_apis, slots=shared) as gateway:
        answers: list[str] = []

        async def ask() -> None:
            answers.append((await gateway.model("local:llama").generate(ASK)).text)

        async with anyio.create_task_group() as tg, shared.slot("local", 1, "interactive"):  # another's call has it
            tg.start_soon(ask)
            await wait_all_tasks_blocked()
            assert fake_openai.requests == []
            assert gateway.status()["scheduler"] == shared.status()
            assert shared.status()["local"]["waiting_interactive"] == 1  # type: ignore[index,call-overload]
        assert answers == ["ok"]
        assert shared.status()["local"]["granted"] == 2  # type: ignore[index,call-overload]


async def test_gateways_sharing_a_source_never_exceed_its_limit_together(
    fake_openai: FakeOpenAIServer, model_apis: dict[str, ModelAPI]
) -> None:
    fake_openai.latency = 0.02
    shared = Scheduler(FakeClock())
    async with (
        Gateway(config(fake_openai, 2), model_apis, slots=shared) as one,
        Gateway(config(fake_openai, 2), model_apis, slots=shared) as two,
        anyio.create_task_group() as tg,
    ):
        for gateway in (one, two, one, two, one, two):
            tg.start_soon(gateway.model("local:llama").generate, ASK)
    assert len(fake_openai.requests) == 6
    assert fake_openai.most_in_flight <= 2
    assert shared.status()["local"]["granted"] == 6  # type: ignore[index,call-overload]
