"""On a real Host: the memory tools are offered to trusted and owner turns, never to untrusted ones."""

from __future__ import annotations

from typing import Any

import pytest

from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.testing import FakeOpenAIServer, MakeHost, profile_yaml
from tests.sessions.conftest import Router, _settle

pytestmark = pytest.mark.anyio

TRUST = "trust: {owners: ['fake:42'], trusted: ['fake:7']}\n"


@pytest.fixture
def router(fake_openai: FakeOpenAIServer) -> Router:
    routed = Router()
    fake_openai.default = routed
    return routed


def offered(body: Any) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


async def turns_of(make_host: MakeHost, router: Router, extra: str, users: list[str]) -> list[set[str]]:
    async with make_host(profiles={"ana": profile_yaml(extra=TRUST + extra)}) as th:
        channel = th.channel()
        for user in users:
            delivery = await channel.say(f"hello from {user}", user_id=user)
            assert isinstance(delivery, RuntimeDelivery)
            await _settle(delivery.runtime)
    return [offered(body) & {"remember", "recall", "forget"} for body in router.requests()]


async def test_untrusted_turns_never_get_the_memory_tools(make_host: MakeHost, router: Router) -> None:
    trusted = "extends: {memory: {config: {tools: trusted}}}\n"
    tools = await turns_of(make_host, router, trusted, ["42", "7", "3"])
    assert tools == [{"remember", "recall", "forget"}, {"remember", "recall", "forget"}, set()]


async def test_the_level_is_configurable(make_host: MakeHost, router: Router) -> None:
    owner_only = "extends: {memory: {config: {tools: owner}}}\n"
    assert await turns_of(make_host, router, owner_only, ["42", "7"]) == [{"remember", "recall", "forget"}, set()]


async def test_off_offers_none_and_is_the_default(make_host: MakeHost, router: Router) -> None:
    off = "extends: {memory: {config: {tools: 'off'}}}\n"
    assert await turns_of(make_host, router, off, ["42"]) == [set()]
    router.seen.clear()
    assert await turns_of(make_host, router, "", ["42"]) == [set()]
