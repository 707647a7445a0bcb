"""The dashboard's test harness: a real ``Host`` in this process (``ishiki_host.testing.TestHost``) serving
HTTP on a free loopback port with the installed ``dashboard`` plugin, a profile ``ana`` on the fake channel
whose model is the loopback ``fake_openai`` server, and an ``httpx.AsyncClient`` already logged in.

``dash`` is that setup with the default config; ``make_dash(...)`` is an async context manager for another
(no token, another listen address, more profiles, more of ``ishiki.yaml`` or ``models.yaml``). The host runs on a
``FakeClock`` (``dash.clock``): sessions and the login limit expire only when a test moves it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from ishiki_host import FakeClock
from ishiki_host.testing import FakeOpenAIServer, TestHost, host_yaml, models_yaml, profile_yaml, write_config

TOKEN = "t0ken-for-tests"
API_KEY = "sk-test-SECRET-0123456789abcdef"
"""The provider's ``api_key`` in ``models.yaml``: no page or API answer may contain it."""
PROFILE = "ana"


@dataclass
class Dash:
    """A running host with the dashboard, and a client logged in to it.

    ``base_url`` is the dashboard's (``http://127.0.0.1:<port>/dashboard``); ``client`` sends the session
    cookie (``client.get("/logs")`` is relative to ``base_url``), and ``csrf`` is its CSRF token (also sent as
    ``X-CSRF-Token`` by ``post``). ``anonymous()`` is a client without a session.
    """

    th: TestHost
    base_url: str
    client: httpx.AsyncClient
    csrf: str
    model: FakeOpenAIServer
    root: Path
    token: str | None

    @property
    def host(self) -> Any:
        """The ``Host``."""
        return self.th.host

    @property
    def clock(self) -> FakeClock:
        """The host's clock."""
        assert isinstance(self.th.clock, FakeClock)
        return self.th.clock

    @property
    def ctx(self) -> Any:
        """The dashboard's ``HostPluginContext`` (what the plugin sees of the host)."""
        return self.th.plugin_context("dashboard")

    @property
    def server(self) -> Any:
        """The running ``DashboardServer`` (its ``dashboard`` is the ``Dashboard``)."""
        return self.th.plugin_instance("dashboard")

    def plugin_status(self) -> Mapping[str, Any]:
        """``Host.status()["plugins"]["dashboard"]``."""
        return self.th.host.status()["plugins"]["dashboard"]

    def anonymous(self, **options: Any) -> httpx.AsyncClient:
        """A client of ``base_url`` without a session (close it: ``async with dash.anonymous() as c``)."""
        return httpx.AsyncClient(base_url=self.base_url, **options)

    async def post(self, path: str, **options: Any) -> httpx.Response:
        """``client.post`` with the CSRF header."""
        headers = {"X-CSRF-Token": self.csrf, **options.pop("headers", {})}
        return await self.client.post(path, headers=headers, **options)


def dashboard_yaml(*, token: str | None = TOKEN, listen: str = "127.0.0.1:0", extra: str = "") -> str:
    """An ``ishiki.yaml`` with the fake channel, HTTP on ``listen`` and the dashboard (``token`` if given)."""
    block = "{}" if token is None else f"{{token: {token}}}"
    return host_yaml(extra=f"http: {{listen: '{listen}'}}\nplugins:\n  dashboard: {block}\n{extra}")


async def log_in(client: httpx.AsyncClient, token: str) -> str:
    """Log ``client`` in with ``token``; returns the session's CSRF token."""
    answer = await client.post("/login", data={"token": token})
    assert answer.status_code == 303, answer.text
    session = await client.get("/api/session")
    assert session.status_code == 200, session.text
    csrf = session.json()["csrf"]
    assert isinstance(csrf, str)
    return csrf


def csrf_of(page: str) -> str:
    """The CSRF token in a page's ``<meta name="csrf-token">``."""
    match = re.search(r'<meta name="csrf-token" content="([^"]*)"', page)
    assert match is not None, "no csrf-token meta in the page"
    return match.group(1)


MakeDash = Callable[..., AbstractAsyncContextManager[Dash]]
NextEvent = Callable[[AsyncIterator[str]], Awaitable[tuple[str, str]]]
SSE_WAIT = 20.0


async def read_next_event(lines: AsyncIterator[str]) -> tuple[str, str]:
    """The next server-sent event's name and data from a stream's lines (``answer.aiter_lines()``)."""
    name, data = "message", []
    with anyio.fail_after(SSE_WAIT):  # a backstop: the event comes, or the test says the stream stalled
        async for line in lines:
            if not line and data:
                return name, "\n".join(data)
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
    raise AssertionError("the stream ended")


@pytest.fixture
def next_event() -> NextEvent:
    """``await next_event(lines)``: the next server-sent event's name and data."""
    return read_next_event


@pytest.fixture
def make_dash(tmp_path: Path, fake_openai: FakeOpenAIServer) -> MakeDash:
    """``async with make_dash(token=..., listen=..., host_extra=..., models_extra=..., price=..., profiles=...)
    as dash``; ``price`` is the fake model's ``price`` in ``models.yaml`` (``{input: 2, output: 8}``)."""

    @asynccontextmanager
    async def make(
        *,
        token: str | None = TOKEN,
        listen: str = "127.0.0.1:0",
        host_extra: str = "",
        models_extra: str = "",
        price: str | None = None,
        profiles: Mapping[str, str] | None = None,
        files: Mapping[str, str] | None = None,
        log_in_first: bool = True,
    ) -> AsyncIterator[Dash]:
        priced = f"        price: {price}\n" if price is not None else ""  # on the model entry listed last
        models = models_yaml(fake_openai, extra=f"{priced}    api_key: {API_KEY}\n{models_extra}")
        root = write_config(
            tmp_path / "bot",
            profiles=profiles or {PROFILE: profile_yaml()},
            models=models,
            host=dashboard_yaml(token=token, listen=listen, extra=host_extra),
            files=files,
        )
        async with TestHost(root) as th:
            base_url = f"{th.host.http.base_url}/dashboard"
            async with httpx.AsyncClient(base_url=base_url) as client:
                csrf = await log_in(client, token) if (log_in_first and token is not None) else ""
                yield Dash(th, base_url, client, csrf, fake_openai, root, token)

    return make


@pytest.fixture
async def dash(make_dash: MakeDash) -> AsyncIterator[Dash]:
    """The default setup (see the module docstring), logged in with :data:`TOKEN`."""
    async with make_dash() as running:
        yield running
