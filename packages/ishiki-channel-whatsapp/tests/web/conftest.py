"""Fixtures of the ``web`` backend's tests: a fake device (``FakeWebClient``) behind a real ``WebConnection`` on a
recording channel host and the fake clock. Events are neonize's own objects (``ishiki_channel_whatsapp.web.testing``).
"""

from __future__ import annotations

import contextlib
import io

import anyio
import pytest

from ishiki_channel_whatsapp.web.config import WebSettings
from ishiki_channel_whatsapp.web.connection import WebConnection
from ishiki_channel_whatsapp.web.testing import FakeWebClient
from ishiki_channel_whatsapp.web.wire import Identity

ME = Identity("491511234567", lid="987654321012345", name="Ishiki")
"""The account the fake device is linked to (configured as ``phone: +49 151 1234567``)."""


@pytest.fixture
def web_account():
    """``web_account(**web keys)``: a ``backend: web`` account entry for ``ME``'s number."""

    def make(**web):
        return {"backend": "web", "web": {"phone": "+49 151 1234567", **web}}

    return make


@pytest.fixture
def device():
    """A fake device linked to ``ME`` that connects at once, as one with a stored session does."""
    return FakeWebClient(me=ME)


class Prompts(io.StringIO):
    """A stderr stand-in that can be waited on: ``await prompts.showing(text, count)``."""

    def __init__(self) -> None:
        super().__init__()
        self._written = anyio.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        self._written.set()
        self._written = anyio.Event()
        return written

    async def showing(self, text: str, count: int = 1) -> None:
        """Return once ``text`` was written ``count`` times."""
        with anyio.fail_after(5):
            while self.getvalue().count(text) < count:
                await self._written.wait()


@pytest.fixture
def prompts():
    """Where pairing prompts are written (instead of stderr)."""
    return Prompts()


@pytest.fixture
def web_connection(channel_host, device, web_account, prompts):
    """``web_connection(**web keys)``: a ``WebConnection`` on ``channel_host`` (or ``host``) driving ``device`` (or
    ``client``); ``account`` replaces the whole entry."""

    def make(*, account=None, client=None, host=None, **web):
        settings = WebSettings.from_config(account or web_account(**web))
        factory = (client or device).factory
        return WebConnection(host or channel_host, settings, client_factory=factory, out=prompts)

    return make


@pytest.fixture
def running_web(web_connection):
    """``async with running_web(**web keys) as connection:`` a connection that reported readiness."""

    @contextlib.asynccontextmanager
    async def run(connection=None, **web):
        connection = connection or web_connection(**web)
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(5):
                await tg.start(connection.run)
            yield connection
            tg.cancel_scope.cancel()

    return run


@pytest.fixture
def restart(fake_clock):
    """``await restart(connection)``: wait until ``connection`` waits to start its next life (its back-off), then
    move the clock past that wait; returns its length. The check runs at every scheduler turn: no time passes."""

    async def wake(connection) -> float:
        with anyio.fail_after(5):
            while connection.status()["state"] != "waiting" or not fake_clock.sleepers:
                await anyio.lowlevel.checkpoint()
        delay = fake_clock.next_deadline() - fake_clock.now()
        await fake_clock.advance(delay)
        return delay

    return wake


@pytest.fixture
def session_files(channel_host):
    """``session_files()``: put a session database and a saved identity (``ME``) where the connection keeps them,
    as a device that paired before leaves them; returns their paths."""
    import json

    def make(phone: str = ME.phone):
        state = channel_host.state_dir
        state.mkdir(parents=True, exist_ok=True)
        database, identity = state / "whatsapp-web-session.db", state / "whatsapp-web-identity.json"
        database.write_bytes(b"SQLite format 3\x00")
        identity.write_text(json.dumps({"phone": phone, "lid": ME.lid, "name": ME.name}))
        return database, identity

    return make


def message(content=None, **keys):
    """A ``neonize.Message`` event from Alice in a direct chat unless told otherwise."""
    from ishiki_channel_whatsapp.web.testing import message_event, text

    keys.setdefault("chat", "491700000001@s.whatsapp.net")
    return message_event(content if content is not None else text("hello"), **keys)


@pytest.fixture
def incoming():
    """``incoming(content=text("hello"), **message_event keys)``: a message event, from Alice by default."""
    return message
