"""Fixtures of the MCP extension's tests: a config dir with ``mcp.json``, runtimes on real parts, child pids.

Servers are the package's demo server (``ishiki_ext_mcp.testing.demo_server``, written with the SDK) run as
real subprocesses; helpers live in ``ishiki_ext_mcp.testing`` (test modules cannot import each other).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from ishiki_host import FakeClock, HostServices, LanguageModel
from ishiki_host.testing import ScriptedModel

from ishiki_ext_mcp import MCPExtension, MCPInstance
from ishiki_ext_mcp.testing import ConfigDir, ConfigHarness, RuntimeFactory, child_pids


@pytest.fixture
def cfg(tmp_path: Path) -> ConfigDir:
    """An empty config directory."""
    root = tmp_path / "config"
    root.mkdir()
    return ConfigDir(root)


@pytest.fixture
def open_runtime(cfg: ConfigDir, tmp_path: Path, fake_clock: FakeClock) -> RuntimeFactory:
    """``open_runtime(name, model=..., profile="p", servers=None, services=None)``: a runtime with MCP mounted."""

    @asynccontextmanager
    async def open_(
        name: str = "r1",
        *,
        model: LanguageModel | None = None,
        profile: str = "p",
        servers: Sequence[str] | None = None,
        services: HostServices | None = None,
    ) -> AsyncIterator[tuple[ConfigHarness, MCPInstance]]:
        harness = ConfigHarness(
            tmp_path / "runtimes" / name,
            config_dir=cfg.root,
            services=services if services is not None else HostServices(),
            model=model or ScriptedModel([]),
            profile=cfg.profile(profile),
            clock=fake_clock,
            channel_id=f"private:{name}",
        )
        config = {"servers": list(servers)} if servers is not None else {}
        async with harness as rt:
            instance = MCPExtension().create(rt.context, config)
            await rt.mount_extension(instance)
            yield rt, instance

    return open_


@pytest.fixture
def children() -> Callable[[], set[int]]:
    """A function listing this process's child pids (from /proc)."""
    return child_pids
