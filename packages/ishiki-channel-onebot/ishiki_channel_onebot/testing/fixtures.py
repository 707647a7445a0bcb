"""Pytest fixtures for OneBot channel tests (entry point ``pytest11``: installed with this package).

- ``onebot``: a running ``FakeOneBot``; the test fails if the fake itself crashed.
- ``onebot_host``: a ``FakeChannelHost`` on the ``fake_clock``, its state under ``tmp_path``, mounting its path
  at ``/hooks/onebot/0`` on a real HTTP ingress on the loopback interface (reverse and http modes).
- ``onebot_account``: ``(**keys) -> dict``, a forward-mode account entry aimed at ``onebot`` with its token;
  ``mode="reverse"`` or ``mode="http"`` give the keys those modes need.
- ``onebot_connection``: ``(**account keys) -> OneBotConnection`` for ``onebot_host`` (``host=`` and ``rng=``
  replace the host and the seeded random source).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import pytest
from ishiki_host.testing import FakeChannelHost, serve_http

from ishiki_channel_onebot.config import OneBotAccount
from ishiki_channel_onebot.connection import OneBotConnection
from ishiki_channel_onebot.testing.fake import FakeOneBot

if TYPE_CHECKING:
    from pathlib import Path

    from ishiki_host import FakeClock


@pytest.fixture
async def onebot() -> AsyncIterator[FakeOneBot]:
    """A fake OneBot implementation on 127.0.0.1."""
    async with FakeOneBot() as bot:
        yield bot
    assert not bot.errors, "the fake OneBot implementation crashed:\n" + "\n".join(bot.errors)


@pytest.fixture
async def onebot_host(tmp_path: Path, fake_clock: FakeClock) -> AsyncIterator[FakeChannelHost]:
    """A recording channel host on ``fake_clock`` whose path is served by a real loopback ingress."""
    async with serve_http() as ingress:
        yield FakeChannelHost(tmp_path / "onebot", clock=fake_clock, http=ingress, http_prefix="/hooks/onebot/0")


@pytest.fixture
def onebot_account(onebot: FakeOneBot) -> Callable[..., dict[str, Any]]:
    """Make an account entry aimed at ``onebot``; keyword arguments add or replace keys."""

    def make(**keys: Any) -> dict[str, Any]:
        mode = keys.get("mode", "forward")
        base: dict[str, Any] = {"mode": mode, "access_token": onebot.access_token}
        if mode == "forward":
            base["url"] = onebot.url
        else:
            base["self_id"] = str(onebot.self_id)
            if mode == "http":
                base["url"] = onebot.http_url
        return {key: value for key, value in {**base, **keys}.items() if value is not None}

    return make


@pytest.fixture
def onebot_connection(
    onebot_account: Callable[..., dict[str, Any]], onebot_host: FakeChannelHost
) -> Callable[..., OneBotConnection]:
    """Make a connection to ``onebot`` for ``onebot_host``; keyword arguments are account keys."""

    def make(*, host: FakeChannelHost | None = None, rng: random.Random | None = None, **keys: Any) -> OneBotConnection:
        account = OneBotAccount.from_config(onebot_account(**keys))
        return OneBotConnection(host or onebot_host, account, rng=rng or random.Random(1234))

    return make
