"""Fixtures for end-to-end tests of plugins on a real ``Host``.

``make_host``
    ``make_host(profiles={"ana": profile_yaml()}, plugins={...}, **host_options)`` writes a config directory
    under ``tmp_path`` whose ``models.yaml`` points at the ``fake_openai`` server (group ``default``) and
    returns a ``TestHost`` to enter with ``async with``. ``models=`` and ``host=`` replace models.yaml and
    ishiki.yaml; ``files=`` adds files.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.testing.fake_openai import FakeOpenAIServer
from ishiki_host.testing.host import MakeHost, TestHost, models_yaml, write_config


@pytest.fixture
def make_host(tmp_path: Path, fake_openai: FakeOpenAIServer) -> MakeHost:
    """A factory of ``TestHost`` on fresh config directories (see the module docstring)."""
    counter = itertools.count(1)

    def make(
        *,
        profiles: Mapping[str, str],
        models: str | None = None,
        host: str | None = None,
        files: Mapping[str, str] | None = None,
        plugins: Mapping[str, type] | None = None,
        root: Path | None = None,
        **options: Any,
    ) -> TestHost:
        root = root or tmp_path / f"host{next(counter)}"
        write_config(root, profiles=profiles, models=models or models_yaml(fake_openai), host=host, files=files)
        return TestHost(root, plugins=plugins, **options)

    return make
