"""The overview of a host in a fleet (``store: <PostgreSQL>``): the Fleet panel with this host's holder, store,
leases and lease period, and an exclusive channel account another host runs shown as standing by. Two real
hosts with the dashboard share one database of a throwaway server; a host on the file store shows no panel."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from ishiki_host.testing import FakeOpenAIServer, TestHost, host_yaml, models_yaml, profile_yaml, write_config
from ishiki_host.testing.postgres import PostgresServer

from ishiki_dashboard.pages.overview import render

pytestmark = pytest.mark.anyio

TOKEN = "fleet-t0ken-for-tests"
STANDBY = "standby (another host of the fleet runs it)"
ACCOUNT = "fake#0"


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """One throwaway server for the module's tests."""
    with PostgresServer() as server:
        yield server


def fleet_host_yaml(url: str, name: str) -> str:
    """An exclusive fake account, the dashboard on a free port, and the fleet ``name`` on the store ``url``."""
    extra = (
        f"http: {{listen: '127.0.0.1:0'}}\nplugins:\n  dashboard: {{token: {TOKEN}}}\n"
        f"store: {url}\nfleet: {{name: {name}, lease_seconds: 30, poll_seconds: 0.2}}\n"
    )
    return host_yaml("[{self_id: bot, exclusive: true}]", extra=extra)


@asynccontextmanager
async def fleet_dash(root: Path, url: str, name: str, model: FakeOpenAIServer) -> AsyncIterator[httpx.AsyncClient]:
    """A host of the fleet with the dashboard, and a client logged in to its dashboard."""
    config = write_config(
        root, profiles={"ana": profile_yaml()}, models=models_yaml(model), host=fleet_host_yaml(url, name)
    )
    async with TestHost(config) as th, httpx.AsyncClient(base_url=f"{th.host.http.base_url}/dashboard") as client:
        answer = await client.post("/login", data={"token": TOKEN})
        assert answer.status_code == 303, answer.text
        yield client


async def overview_when(client: httpx.AsyncClient, state: str) -> dict[str, Any]:
    """``/api/overview`` once the fake account's state is ``state`` (polled: the lease is taken in the host's
    own time)."""
    with anyio.fail_after(30):
        while True:
            data: dict[str, Any] = (await client.get("/api/overview")).json()
            if data["channels"].get(ACCOUNT, {}).get("state") == state:
                return data
            await anyio.sleep(0.05)


async def test_the_overview_shows_the_fleet_and_the_account_another_host_runs_as_standby(
    tmp_path: Path, fake_openai: FakeOpenAIServer, postgres: PostgresServer
) -> None:
    url = postgres.create_database("fleet_panel")
    async with fleet_dash(tmp_path / "a", url, "a", fake_openai) as a:
        running = await overview_when(a, "running")
        async with fleet_dash(tmp_path / "b", url, "b", fake_openai) as b:
            standing_by = await overview_when(b, "standby")
            page_a = (await a.get("/")).text
            page_b = (await b.get("/")).text
    fleet_a, fleet_b = running["fleetHost"], standing_by["fleetHost"]
    assert fleet_a["holder"].startswith("a/")
    assert fleet_b["holder"].startswith("b/")
    assert fleet_a["accountLeases"] == [ACCOUNT]
    assert fleet_b["accountLeases"] == []
    assert "<h2>Fleet</h2>" in page_a
    assert "<h2>Fleet</h2>" in page_b
    for field in (fleet_a["holder"], html.escape(fleet_a["store"]), f"<td>{ACCOUNT}</td>", "<td>30.0 s</td>"):
        assert field in page_a, field
    assert fleet_b["holder"] in page_b
    assert "<td>none</td>" in page_b
    assert STANDBY in page_b
    assert STANDBY not in page_a


async def test_the_fleet_panel_escapes_every_value() -> None:
    class Stub:
        def url(self, path: str) -> str:
            return f"/dashboard{path}"

    fleet = {
        "holder": "<b>web-1</b>/3f2a9c1d",
        "store": "postgresql://user:***@db/ishiki?a=1&b=<2>",
        "runtimeLeases": 3,
        "accountLeases": ["telegram#0", "<i>x</i>#1"],
        "leaseSeconds": 15.0,
        "fleet": {
            "hosts": [
                {"name": "<b>web-2</b>", "holder": "web-2/77aa00bb", "alive": False, "seenSecondsAgo": 612.4,
                 "runtimeLeases": 0, "accountLeases": 0},
            ],
            "inbox": {"waiting": 2, "taken": 0, "lagSeconds": 7.6},
        },
    }  # fmt: skip
    data: dict[str, Any] = {"host": {}, "profiles": [], "channels": {}, "plugins": {}, "fleetHost": fleet}
    page = render(Stub(), data)  # type: ignore[arg-type]  # render reads only dash.url
    assert "&lt;b&gt;web-1&lt;/b&gt;/3f2a9c1d" in page
    assert "postgresql://user:***@db/ishiki?a=1&amp;b=&lt;2&gt;" in page
    assert "<td>3</td>" in page
    assert "telegram#0, &lt;i&gt;x&lt;/i&gt;#1" in page
    assert "<td>15.0 s</td>" in page
    assert "<td>&lt;b&gt;web-2&lt;/b&gt;</td>" in page  # every host of the fleet as last read, escaped too
    assert "<td>gone</td><td>612 s ago</td>" in page
    assert "Inbox: 2 waiting, the oldest for 8 s" in page
    assert "<b>" not in page
    assert "<i>" not in page


async def test_a_host_on_the_file_store_shows_no_fleet(dash: Any) -> None:
    data = (await dash.client.get("/api/overview")).json()
    page = (await dash.client.get("/")).text
    assert "fleetHost" not in data
    assert "<h2>Fleet</h2>" not in page
    assert STANDBY not in page
