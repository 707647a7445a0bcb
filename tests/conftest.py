"""Shared fixtures of the host's tests: the test plugin distribution, the real ``ishiki`` command, config dirs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.plugins.discovery import PluginRegistry, discover
from ishiki_host.store import MemoryStore

REPO = Path(__file__).resolve().parent.parent
FIXTURE_DIST = Path(__file__).resolve().parent / "plugin_fixtures"

RunIshiki = Callable[..., subprocess.CompletedProcess[str]]
WriteConfig = Callable[..., Path]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (itself an example config directory)."""
    return REPO


@pytest.fixture(scope="session")
def ishiki_bin() -> Path:
    """The ``ishiki`` console script of the venv running the tests."""
    path = Path(sys.executable).parent / "ishiki"
    assert path.exists(), f"{path} is missing: run `make setup`"
    return path


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test distribution installed with pip into a directory of its own (never into the venv)."""
    source = tmp_path_factory.mktemp("plugin-src") / "dist"
    shutil.copytree(FIXTURE_DIST, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path_factory.mktemp("plugin-site")
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    command += ["--disable-pip-version-check", "--no-input", "--target", str(target), str(source)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return target


@pytest.fixture
def plugin_registry(plugin_site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PluginRegistry]:
    """The test distribution on ``sys.path`` for this test, and the registry discovered with it."""
    monkeypatch.syspath_prepend(str(plugin_site))
    yield discover()
    for name in [m for m in sys.modules if m == "ishiki_test_plugins" or m.startswith("ishiki_test_plugins.")]:
        del sys.modules[name]


@pytest.fixture
def run_ishiki(ishiki_bin: Path, plugin_site: Path) -> RunIshiki:
    """Run the real ``ishiki`` command; ``plugins=True`` puts the test distribution on its path."""

    def run(
        *args: str, cwd: Path | None = None, plugins: bool = False, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if plugins:
            environ["PYTHONPATH"] = str(plugin_site)
        environ.update(env or {})
        command = [str(ishiki_bin), *args]
        return subprocess.run(command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=120, check=False)

    return run


@pytest.fixture
def write_config(tmp_path: Path) -> WriteConfig:
    """Write files (relative path -> text or bytes) under a new config dir and return the dir."""
    counter = iter(range(1_000_000))

    def write(files: Mapping[str, str | bytes], name: str | None = None) -> Path:
        root = tmp_path / (name or f"config{next(counter)}")
        for relative, content in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        root.mkdir(parents=True, exist_ok=True)
        return root

    return write


ECHO_MODELS = """\
providers:
  echo:
    api: echo
    models:
      - id: small
        context_window: 8000
groups:
  default:
    models: [echo:small]
"""
"""A ``models.yaml`` served by the test distribution's ``echo`` API."""


@pytest.fixture
def echo_models() -> str:
    """``models.yaml`` text using the test distribution's echo API (group ``default``)."""
    return ECHO_MODELS


@pytest.fixture
def profile_files() -> Callable[..., dict[str, str]]:
    """Files of one profile: ``profile_files("a", "model: default")``."""

    def files(profile_id: str, text: str, persona: str = "You are a test persona.\n") -> dict[str, str]:
        return {f"profiles/{profile_id}/profile.yml": text, f"profiles/{profile_id}/persona.md": persona}

    return files


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's memory database lives (its directory does not exist yet)."""
    return tmp_path / "data" / "memory.db"


@pytest.fixture
async def store(db_path: Path, fake_clock: FakeClock) -> AsyncIterator[MemoryStore]:
    """An open memory database on a temporary file; closed (and checked for integrity) after the test."""
    async with await MemoryStore.open(db_path, clock=fake_clock) as opened:
        yield opened
        assert await opened.integrity_problems() == []
