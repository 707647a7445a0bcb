"""Helpers shared by this package's tests (test modules cannot import each other)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """The WebSocket library and uvicorn run on asyncio (``ishiki run`` runs the host there, or on uvloop)."""
    return "asyncio"


# -- end to end: a real host (in process, or `ishiki run` in a subprocess) on a config directory ----------------

PROFILE = "model: default\nchannels:\n  onebot:10001: ['*']\nextends:\n  onebot: {}\n"
"""The profile every end-to-end test runs: the built-in engines, every chat of the fake bot, ``onebot://``."""


@pytest.fixture
def ob_config(tmp_path, onebot, fake_openai):
    """``ob_config(profiles=..., root=..., listen=..., **account keys)``: a config directory whose ``ishiki.yaml``
    has one account aimed at ``onebot`` (forward mode unless ``mode`` says otherwise; its token from
    ``${ONEBOT_ACCESS_TOKEN}``) and whose models.yaml points at ``fake_openai``."""
    from ishiki_host.testing import models_yaml, write_config

    def write(*, profiles=None, root=None, listen="127.0.0.1:0", **account):
        mode = account.get("mode", "forward")
        keys = {"self_id": f"'{onebot.self_id}'", "backoff_max": 2, **account}
        if mode != "reverse":
            keys.setdefault("url", onebot.url if mode == "forward" else onebot.http_url)
        lines = "".join(f"        {key}: {value}\n" for key, value in keys.items())
        host = (
            "reload_interval_seconds: 0\nscheduler: {interactive_grace_seconds: 0}\n"
            f'http: {{listen: "{listen}"}}\n'
            "channels:\n  onebot:\n    accounts:\n      - access_token: ${ONEBOT_ACCESS_TOKEN}\n" + lines
        )
        root = root or tmp_path / "bot"
        return write_config(root, profiles=profiles or {"helper": PROFILE}, models=models_yaml(fake_openai), host=host)

    return write


@pytest.fixture
def ob_env(onebot):
    """The environment the account's ``${ONEBOT_ACCESS_TOKEN}`` expands from."""
    return {"ONEBOT_ACCESS_TOKEN": onebot.access_token}


@pytest.fixture
def ishiki(ob_env, ishiki_processes):
    """``await ishiki(root).start()``: an ``IshikiProcess`` with the token in its environment (the test kit's
    ``ishiki_processes``: every process still running at the end is killed)."""
    return lambda root: ishiki_processes(root, env=ob_env)
