"""Helpers shared by this package's tests (test modules cannot import each other)."""

from __future__ import annotations

import pytest


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


@pytest.fixture
def ishiki(wa_env, ishiki_processes):
    """``await ishiki(root).start()``: an ``IshikiProcess`` with the account's secrets in its environment (the test
    kit's ``ishiki_processes``: every process still running at the end is killed)."""
    return lambda root: ishiki_processes(root, env=wa_env)
