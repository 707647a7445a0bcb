"""Helpers shared by this package's tests (test modules cannot import each other)."""

from __future__ import annotations

import anyio
import pytest


@pytest.fixture
def sleeping(fake_clock):
    """``await sleeping()``: wait (a few seconds at most) until something sleeps on the fake clock."""

    async def wait() -> None:
        with anyio.fail_after(5):
            await fake_clock.wait_for_sleepers(1)

    return wait


# -- end to end: a real host (in process, or `ishiki run` in a subprocess) on a config directory ----------------

HELPER = 'model: default\nchannels:\n  telegram:7000000001: ["*"]\n'
"""The profile every end-to-end test runs: the built-in engines, every chat of the fake bot."""


@pytest.fixture
def bot_config(tmp_path, telegram_server, fake_openai):
    """``bot_config(profiles=..., root=..., http=..., **account keys)``: write a config directory whose
    ``ishiki.yaml`` has one Telegram account aimed at ``telegram_server`` (token ``${TELEGRAM_BOT_TOKEN}``) and
    whose models.yaml points at ``fake_openai``; by default one profile, ``helper``, claims every chat of the
    bot. ``http`` is the ``http:`` block of ``ishiki.yaml`` (flow style), for webhook mode."""
    from ishiki_host.testing import models_yaml, write_config

    def write(*, profiles=None, root=None, http=None, **account):
        keys = {"name": "helper", "api_base": telegram_server.url, "backoff_max": 30, **account}
        lines = "".join(f"        {key}: {value}\n" for key, value in keys.items())
        # Background calls after a turn (the summarizer) wait out the scheduler's interactive grace on the
        # fake clock, which only the test moves: with a grace, every stop would sit out its real 10 s deadline.
        host = (
            "reload_interval_seconds: 0\nscheduler: {interactive_grace_seconds: 0}\n"
            "channels:\n  telegram:\n    accounts:\n"
            "      - token: ${TELEGRAM_BOT_TOKEN}\n" + lines + (f"http: {http}\n" if http else "")
        )
        root = root or tmp_path / "bot"
        return write_config(root, profiles=profiles or {"helper": HELPER}, models=models_yaml(fake_openai), host=host)

    return write


@pytest.fixture
def bot_host(bot_config, telegram_server, fake_clock):
    """``bot_host(**bot_config keywords)``: a ``TestHost`` (enter it with ``async with``) on a fresh
    ``bot_config``, the token in its environment, on ``fake_clock``."""
    from ishiki_host.testing import TestHost

    def make(*, token=None, **config):
        root = bot_config(**config)
        return TestHost(root, clock=fake_clock, env={"TELEGRAM_BOT_TOKEN": token or telegram_server.token})

    return make


@pytest.fixture
def ishiki(telegram_server, ishiki_processes):
    """``await ishiki(root, *options, token=...).start()``: an ``IshikiProcess`` (``ishiki run root options``) with
    ``TELEGRAM_BOT_TOKEN`` set (the fake's token unless given); the test kit's ``ishiki_processes`` kills every
    process still running at the end."""

    def make(root, *options, token=None):
        return ishiki_processes(root, *options, env={"TELEGRAM_BOT_TOKEN": token or telegram_server.token})

    return make
