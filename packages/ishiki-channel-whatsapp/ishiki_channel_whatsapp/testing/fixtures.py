"""Pytest fixtures for WhatsApp channel tests (entry point ``pytest11``: installed with this package).

- ``whatsapp_graph``: a running ``FakeGraphAPI``; the test fails if the fake itself crashed.
- ``whatsapp_host``: a ``FakeChannelHost`` on the ``fake_clock``, its state under ``tmp_path``, mounting webhooks
  at ``/hooks/whatsapp/0`` on a real HTTP ingress on the loopback interface.
- ``whatsapp_account``: ``(**keys) -> dict``, a ``cloud`` account entry aimed at ``whatsapp_graph`` with the
  test kit's token, app secret and verify token.
- ``whatsapp_connection``: ``(**account keys) -> CloudConnection`` for ``whatsapp_host`` (``host=`` and ``rng=``
  replace the host and the seeded random source).
- ``whatsapp_driver``: ``(connection) -> WebhookDriver`` posting to the running connection's webhook, signed
  with its app secret.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import pytest
from ishiki_host.testing import FakeChannelHost, serve_http

from ishiki_channel_whatsapp.testing.driver import DEFAULT_APP_SECRET, DEFAULT_VERIFY_TOKEN, WebhookDriver
from ishiki_channel_whatsapp.testing.graph import FakeGraphAPI

if TYPE_CHECKING:
    from pathlib import Path

    from ishiki_host import FakeClock

    from ishiki_channel_whatsapp.cloud.connection import CloudConnection


@pytest.fixture
async def whatsapp_graph() -> AsyncIterator[FakeGraphAPI]:
    """A fake Graph API on 127.0.0.1."""
    async with FakeGraphAPI() as graph:
        yield graph
    assert not graph.errors, "the fake Graph API crashed:\n" + "\n".join(graph.errors)


@pytest.fixture
async def whatsapp_host(tmp_path: Path, fake_clock: FakeClock) -> AsyncIterator[FakeChannelHost]:
    """A recording channel host on ``fake_clock`` whose webhooks are served by a real loopback ingress."""
    async with serve_http() as ingress:
        yield FakeChannelHost(tmp_path / "whatsapp", clock=fake_clock, http=ingress, http_prefix="/hooks/whatsapp/0")


@pytest.fixture
def whatsapp_account(whatsapp_graph: FakeGraphAPI) -> Callable[..., dict[str, Any]]:
    """Make a ``cloud`` account entry aimed at ``whatsapp_graph``; keyword arguments add or replace keys."""

    def make(**keys: Any) -> dict[str, Any]:
        return {
            "backend": "cloud",
            "phone_number_id": whatsapp_graph.phone_number_id,
            "access_token": whatsapp_graph.token,
            "app_secret": DEFAULT_APP_SECRET,
            "verify_token": DEFAULT_VERIFY_TOKEN,
            "graph_base": whatsapp_graph.url,
            **keys,
        }

    return make


@pytest.fixture
def whatsapp_connection(
    whatsapp_account: Callable[..., dict[str, Any]], whatsapp_host: FakeChannelHost
) -> Callable[..., CloudConnection]:
    """Make a connection to ``whatsapp_graph`` for ``whatsapp_host``; keyword arguments are account keys."""
    from ishiki_channel_whatsapp.cloud.connection import CloudConnection
    from ishiki_channel_whatsapp.config import CloudAccount

    def make(*, host: FakeChannelHost | None = None, rng: random.Random | None = None, **keys: Any) -> CloudConnection:
        account = CloudAccount.from_config(whatsapp_account(**keys))
        return CloudConnection(host or whatsapp_host, account, rng=rng or random.Random(1234))

    return make


@pytest.fixture
async def whatsapp_driver() -> AsyncIterator[Callable[[CloudConnection], WebhookDriver]]:
    """Make a driver for a running connection's webhook (its ``status()["webhook"]``), signing with its app
    secret; every driver is closed at the end."""
    drivers: list[WebhookDriver] = []

    def make(connection: CloudConnection) -> WebhookDriver:
        url = connection.status()["webhook"]
        if not isinstance(url, str):
            raise RuntimeError("the connection has no webhook yet: run it first (testing.running)")
        account = connection.account
        driver = WebhookDriver(url, app_secret=account.app_secret, phone_number_id=account.phone_number_id)
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        await driver.aclose()
