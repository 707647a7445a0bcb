"""``/readyz`` over real HTTP: 200 while every channel of the active profiles is up, else 503 saying which is
not and why; ``/healthz`` answers all along."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from ishiki_host.errors import ChannelError
from ishiki_host.testing import host_yaml, profile_yaml
from ishiki_host.testing.channels import FakeChannel, FakeConnection
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

HTTP = "http: {listen: '127.0.0.1:0'}\n"


class Refused(FakeChannel):
    """A channel whose platform refuses the account's token (a fatal error: never restarted)."""

    def create(self, ctx: Any, account: Mapping[str, Any]) -> Any:
        class Connection(FakeConnection):
            async def run(self, *, task_status: Any = None) -> None:
                raise ChannelError("the token was refused (401)")  # fatal: never restarted

        return Connection(ctx, platform="refused", self_id="r")


async def probe(base_url: str | None, path: str = "/readyz") -> httpx.Response:
    assert base_url is not None
    async with httpx.AsyncClient() as client:
        return await client.get(base_url + path)


async def test_ready_when_every_channel_is_up(make_host: MakeHost) -> None:
    async with make_host(profiles={"ana": profile_yaml()}, host=host_yaml(extra=HTTP)) as th:
        answer = await probe(th.host.http.base_url)
    assert answer.status_code == 200
    assert answer.json() == {"ready": True, "problems": []}


async def test_a_failed_channel_makes_the_host_not_ready_and_says_why(make_host: MakeHost) -> None:
    host = host_yaml(extra="  refused:\n    accounts: [{}]\n" + HTTP)
    profiles = {"ana": profile_yaml("fake:bot: ['*']\nrefused:r: ['*']")}
    async with make_host(profiles=profiles, host=host, plugins={"ishiki.channel.refused": Refused}) as th:
        answer = await probe(th.host.http.base_url)
        health = await probe(th.host.http.base_url, "/healthz")
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "5"
    assert answer.json() == {
        "ready": False,
        "problems": ["channel refused#0 is failed: ChannelError: the token was refused (401)"],
    }
    assert (health.status_code, health.text) == (200, "ok\n")


async def test_a_claimed_platform_without_accounts_is_named(make_host: MakeHost) -> None:
    profiles = {"ana": profile_yaml("fake:bot: ['*']\nrefused:r: ['*']")}
    plugins = {"ishiki.channel.refused": Refused}
    async with make_host(profiles=profiles, host=host_yaml(extra=HTTP), plugins=plugins) as th:
        answer = await probe(th.host.http.base_url)
    assert answer.status_code == 503
    assert answer.json()["problems"] == [
        "profiles claim refused channels, but no refused account can start (see the log)"
    ]


async def test_no_active_profile_is_not_ready(make_host: MakeHost) -> None:
    profiles = {"ana": profile_yaml(extra="enable: false\n")}
    async with make_host(profiles=profiles, host=host_yaml(extra=HTTP)) as th:
        answer = await probe(th.host.http.base_url)
    assert (answer.status_code, answer.json()["problems"]) == (503, ["no profile is active"])


async def test_only_get_is_served(make_host: MakeHost) -> None:
    async with make_host(profiles={"ana": profile_yaml()}, host=host_yaml(extra=HTTP)) as th:
        base = th.host.http.base_url
        async with httpx.AsyncClient() as client:
            posted = await client.post(f"{base}/readyz", content=b"x")
            below = await client.get(f"{base}/metrics/extra")
    assert (posted.status_code, posted.headers["allow"]) == (405, "GET")
    assert below.status_code == 404
