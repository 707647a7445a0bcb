"""Pytest fixtures for Telegram channel tests (entry point ``pytest11``: installed with this package).

- ``telegram_server``: a running ``FakeBotAPI``; the test fails if the fake itself crashed.
- ``telegram_host``: a ``RecordingHost`` on the ``fake_clock``, with its state under ``tmp_path``.
- ``telegram_connection``: a factory ``(**account keys) -> TelegramConnection`` aimed at the fake server, with
  a seeded random source for back-off jitter (made as ``create`` makes it: one that shows drafts unless
  ``drafts="off"``).
- ``telegram_ingress``: the host's real HTTP server on a loopback port (``ishiki_host.testing.serve_http``)
  with ``http.public_url`` ``PUBLIC_URL``, to which ``telegram_server`` delivers webhooks (its ``proxy``: the
  reverse proxy in front of a real bot).
- ``telegram_webhook_host``: ``telegram_host`` with ``telegram_ingress`` as its HTTP server, for connections
  made with ``mode="webhook"``.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import pytest
from ishiki_host.testing import serve_http

from ishiki_channel_telegram.testing.botapi import FakeBotAPI
from ishiki_channel_telegram.testing.host import PUBLIC_URL, RecordingHost

if TYPE_CHECKING:
    from pathlib import Path

    from ishiki_host import FakeClock
    from ishiki_host.testing import HttpIngress

    from ishiki_channel_telegram.connection import TelegramConnection


@pytest.fixture
async def telegram_server(fake_clock: FakeClock) -> AsyncIterator[FakeBotAPI]:
    """A fake Bot API on 127.0.0.1; its messages are dated by ``fake_clock``."""
    async with FakeBotAPI(clock=fake_clock) as server:
        yield server
    assert not server.errors, "the fake Bot API crashed:\n" + "\n".join(server.errors)


@pytest.fixture
def telegram_host(tmp_path: Path, fake_clock: FakeClock) -> RecordingHost:
    """A recording channel host whose clock is ``fake_clock``."""
    return RecordingHost(tmp_path / "telegram-state", clock=fake_clock)


@pytest.fixture
async def telegram_ingress(telegram_server: FakeBotAPI) -> AsyncIterator[HttpIngress]:
    """The host's HTTP server on 127.0.0.1, public as ``PUBLIC_URL`` through the fake's proxy."""
    async with serve_http(public_url=PUBLIC_URL) as ingress:
        assert ingress.base_url is not None
        telegram_server.proxy(PUBLIC_URL, ingress.base_url)
        yield ingress


@pytest.fixture
def telegram_webhook_host(tmp_path: Path, fake_clock: FakeClock, telegram_ingress: HttpIngress) -> RecordingHost:
    """A recording channel host on ``fake_clock`` whose HTTP server is ``telegram_ingress``."""
    return RecordingHost(tmp_path / "telegram-state", clock=fake_clock, http=telegram_ingress)


@pytest.fixture
def telegram_connection(telegram_server: FakeBotAPI, telegram_host: RecordingHost) -> Callable[..., TelegramConnection]:
    """Make a connection to ``telegram_server`` for ``telegram_host``; keyword arguments are account keys
    (``host=`` and ``rng=`` replace the host and the random source)."""
    from ishiki_channel_telegram.config import TelegramAccount
    from ishiki_channel_telegram.connection import make_connection

    def make(*, host: RecordingHost | None = None, rng: random.Random | None = None, **keys: Any) -> TelegramConnection:
        account = TelegramAccount.from_config({"token": telegram_server.token, "api_base": telegram_server.url, **keys})
        return make_connection(host or telegram_host, account, rng=rng or random.Random(1234))

    return make
