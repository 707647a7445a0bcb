"""Helpers shared by this package's tests (test modules cannot import each other)."""

from __future__ import annotations

import anyio
import pytest


@pytest.fixture
def wake_sleeper(fake_clock):
    """``await wake_sleeper()``: wait until something sleeps on the fake clock, then move the clock to its
    deadline; returns the length of that sleep. A sleep that never comes fails after a few seconds."""

    async def wake() -> float:
        with anyio.fail_after(5):
            await fake_clock.wait_for_sleepers(1)
        delay = fake_clock.next_deadline() - fake_clock.now()
        await fake_clock.advance(delay)
        return delay

    return wake


@pytest.fixture
def running_connection(whatsapp_connection, whatsapp_driver):
    """``async with running_connection(**account keys) as (connection, driver):`` a connection running on the
    fake Graph API and a driver posting to its webhook."""
    import contextlib

    from ishiki_channel_whatsapp.testing import running

    @contextlib.asynccontextmanager
    async def run(**keys):
        connection = whatsapp_connection(**keys)
        async with running(connection):
            yield connection, whatsapp_driver(connection)

    return run


# -- end to end: a real host (in process, or `ishiki run` in a subprocess) on a config directory ----------------

PROFILE = 'model: default\nchannels:\n  whatsapp:106540352242922: ["*"]\n'
"""The profile every end-to-end test runs: the built-in engines, every chat of the fake number."""


@pytest.fixture
def wa_config(tmp_path, whatsapp_graph, fake_openai):
    """``wa_config(profiles=..., root=..., listen=..., **account keys)``: a config directory whose ``ishiki.yaml``
    serves HTTP on ``listen`` and has one cloud account aimed at ``whatsapp_graph`` (its secrets from
    ``${WHATSAPP_...}``), and whose models.yaml points at ``fake_openai``; one profile, ``helper``, claims every
    chat of the number."""
    from ishiki_host.testing import models_yaml, write_config

    def write(*, profiles=None, root=None, listen="127.0.0.1:0", **account):
        keys = {"graph_base": whatsapp_graph.url, "backoff_max": 30, **account}
        lines = "".join(f"        {key}: {value}\n" for key, value in keys.items())
        host = (
            "reload_interval_seconds: 0\nscheduler: {interactive_grace_seconds: 0}\n"
            f'http: {{listen: "{listen}"}}\n'
            "channels:\n  whatsapp:\n    accounts:\n"
            "      - backend: cloud\n"
            f'        phone_number_id: "{whatsapp_graph.phone_number_id}"\n'
            "        access_token: ${WHATSAPP_TOKEN}\n"
            "        app_secret: ${WHATSAPP_APP_SECRET}\n"
            "        verify_token: ${WHATSAPP_VERIFY_TOKEN}\n" + lines
        )
        root = root or tmp_path / "bot"
        return write_config(root, profiles=profiles or {"helper": PROFILE}, models=models_yaml(fake_openai), host=host)

    return write


@pytest.fixture
def wa_env(whatsapp_graph):
    """The environment the account's ``${...}`` expand from: the fake's token and the test kit's secrets."""
    from ishiki_channel_whatsapp.testing import DEFAULT_APP_SECRET, DEFAULT_VERIFY_TOKEN

    return {
        "WHATSAPP_TOKEN": whatsapp_graph.token,
        "WHATSAPP_APP_SECRET": DEFAULT_APP_SECRET,
        "WHATSAPP_VERIFY_TOKEN": DEFAULT_VERIFY_TOKEN,
    }


@pytest.fixture
def wa_host(wa_config, wa_env, fake_clock):
    """``wa_host(**wa_config keywords)``: a ``TestHost`` (enter it with ``async with``) on a fresh ``wa_config``,
    the secrets in its environment (``env`` changes them; ``None`` unsets one), on ``fake_clock``."""
    from ishiki_host.testing import TestHost

    def make(*, env=None, **config):
        merged = {key: value for key, value in {**wa_env, **(env or {})}.items() if value is not None}
        return TestHost(wa_config(**config), clock=fake_clock, env=merged)

    return make


class Ishiki:
    """``ishiki run DIR`` in a subprocess; its stderr is read as it comes (``logged`` waits for a line)."""

    def __init__(self, root, env):
        self.root, self.env = root, env
        self.process = None
        self.lines: list[str] = []
        self._changed = anyio.Event()

    async def start(self, tg):
        """Start the process (no console input) and read its stderr in ``tg``."""
        import subprocess
        import sys
        from pathlib import Path

        ishiki = Path(sys.executable).parent / "ishiki"
        self.process = await anyio.open_process(
            [str(ishiki), "run", str(self.root)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=self.env,
        )
        tg.start_soon(self._read)
        return self

    async def _read(self):
        from anyio.streams.text import TextReceiveStream

        buffer = ""
        async for chunk in TextReceiveStream(self.process.stderr, errors="replace"):
            buffer += chunk
            *done, buffer = buffer.split("\n")
            self.lines.extend(done)
            self._changed.set()
            self._changed = anyio.Event()

    async def logged(self, words, *, deadline=60):
        """The first stderr line holding ``words``, once it is written."""
        with anyio.fail_after(deadline):
            while True:
                found = [line for line in self.lines if words in line]
                if found:
                    return found[0]
                await self._changed.wait()

    async def kill(self):
        """SIGKILL, as a crash or a power cut would stop it."""
        self.process.kill()
        with anyio.fail_after(10):
            await self.process.wait()

    async def stop(self):
        """SIGTERM, then wait for the exit; the exit status."""
        self.process.terminate()
        with anyio.fail_after(60):
            return await self.process.wait()

    def stderr(self):
        """Everything the process logged so far."""
        return "\n".join(self.lines)


@pytest.fixture
async def ishiki(wa_env):
    """``await ishiki(root).start(tg)``: an ``Ishiki`` process with the account's secrets in its environment;
    every process still running at the end is killed."""
    import os

    started = []

    def make(root):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL")}
        process = Ishiki(root, {**env, **wa_env})
        started.append(process)
        return process

    yield make
    for process in started:
        if process.process is not None and process.process.returncode is None:
            await process.kill()


@pytest.fixture
def free_port():
    """A loopback port nobody listens on right now (for a subprocess's ``http.listen``)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
