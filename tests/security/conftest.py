"""Fixtures of the security tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """The environment for ``ishiki`` subprocesses: this one without what would point the host elsewhere."""
    hidden = ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN", "GOOD_TOKEN")
    return {k: v for k, v in os.environ.items() if k not in hidden}
