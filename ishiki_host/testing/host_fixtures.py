"""Fixtures for end-to-end tests of plugins on a real ``Host``.

``make_host``
    ``make_host(profiles={"ana": profile_yaml()}, plugins={...}, **host_options)`` writes a config directory
    under ``tmp_path`` whose ``models.yaml`` points at the ``fake_openai`` server (group ``default``) and
    returns a ``TestHost`` to enter with ``async with``. ``models=`` and ``host=`` replace models.yaml and
    ishiki.yaml; ``files=`` adds files.

``ishiki_processes``
    ``ishiki_processes(root, *options, env={...})``: an ``IshikiProcess`` (``ishiki run root options``, not
    started yet) whose environment is this one's without ``PYTHONPATH`` and the ``OPENAI_*`` variables a
    developer may have set, plus ``env``; every one still running at the end of the test is killed.

``free_port``
    A loopback port nobody listens on right now (for a subprocess's ``http.listen``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.testing.fake_openai import FakeOpenAIServer
from ishiki_host.testing.host import MakeHost, TestHost, models_yaml, write_config
from ishiki_host.testing.process import IshikiProcess, free_ports

MakeProcess = Callable[..., IshikiProcess]
"""``ishiki_processes(root, *options, env=None)`` (see the module docstring)."""

_LEFT_OUT = ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL")  # what runs is what is installed, on its own config


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


@pytest.fixture
async def ishiki_processes() -> AsyncIterator[MakeProcess]:
    """A factory of ``IshikiProcess`` killed at the end of the test (see the module docstring)."""
    started: list[IshikiProcess] = []

    def make(root: str | os.PathLike[str], *options: str, env: Mapping[str, str] | None = None) -> IshikiProcess:
        environment = {k: v for k, v in os.environ.items() if k not in _LEFT_OUT}
        process = IshikiProcess(root, *options, env={**environment, **(env or {})})
        started.append(process)
        return process

    yield make
    for process in started:
        await process.close()


@pytest.fixture
def free_port() -> int:
    """A loopback port nobody listens on right now (see the module docstring)."""
    return free_ports(1)[0]
