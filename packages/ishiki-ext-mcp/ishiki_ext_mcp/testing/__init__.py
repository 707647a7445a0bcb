"""Test kit of the MCP extension: the demo server's ``mcpServers`` entry, config dirs, runtimes, child pids.

``demo_server`` (``python -m ishiki_ext_mcp.testing.demo_server``) is a small MCP server written with the SDK.
``ConfigHarness`` is a ``RuntimeHarness`` living in a given config dir and sharing a given ``HostServices``,
as runtimes of one host do; it offers the kernel ``read`` tool so turns can read ``mcp://``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from ishiki_host import HostServices, Profile
from ishiki_host.testing import RuntimeHarness

if TYPE_CHECKING:
    from ishiki_ext_mcp.extension import MCPInstance
    from ishiki_ext_mcp.runner import ServerRunner

__all__ = [
    "DEADLINE",
    "DEMO_MODULE",
    "ConfigDir",
    "ConfigHarness",
    "RuntimeFactory",
    "child_pids",
    "demo",
    "until",
]

DEADLINE = 30.0
"""Seconds a test waits for something that should happen at once (a bound, never a sleep)."""

DEMO_MODULE = "ishiki_ext_mcp.testing.demo_server"


def demo(*args: str, **keys: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry running the demo server over stdio."""
    return {"command": sys.executable, "args": ["-m", DEMO_MODULE, *args], **keys}


class ConfigHarness(RuntimeHarness):
    """A harness in a given config dir, sharing a given ``HostServices`` (as runtimes of one host do).

    It offers the kernel ``read`` tool too, so turns can read ``mcp://`` resources.
    """

    def __init__(self, home: Path, *, config_dir: Path, services: HostServices, **kwargs: Any):
        super().__init__(home, config_dir=config_dir, services=services, kernel_tools=("read",), **kwargs)


class ConfigDir:
    """A config directory under test: ``write`` its ``mcp.json``, make ``profile``s."""

    def __init__(self, root: Path):
        self.root = root

    def write(self, servers: Mapping[str, Any], profile: str | None = None) -> Path:
        """Write ``{"mcpServers": servers}`` at the root, or for one profile."""
        where = self.root / "profiles" / profile if profile else self.root
        where.mkdir(parents=True, exist_ok=True)
        path = where / "mcp.json"
        path.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
        return path

    def profile(self, profile_id: str = "p") -> Profile:
        """A profile living in this config dir."""
        directory = self.root / "profiles" / profile_id
        directory.mkdir(parents=True, exist_ok=True)
        return Profile(
            id=profile_id, directory=directory, file=directory / "profile.yml", persona="You test MCP.", model="test"
        )


def child_pids() -> set[int]:
    """The pids of this process's children (from /proc), zombies included."""
    me = os.getpid()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[1]) == me:
            found.add(int(entry))
    return found


RuntimeFactory = Callable[..., AbstractAsyncContextManager[tuple[ConfigHarness, "MCPInstance"]]]
"""The ``open_runtime`` fixture: ``async with open_runtime(name, model=..., servers=...) as (rt, mcp)``."""


async def until(runner: ServerRunner, predicate: Callable[[ServerRunner], bool]) -> None:
    """Wait until ``predicate(runner)`` holds, at most ``DEADLINE`` seconds."""
    with anyio.fail_after(DEADLINE):
        await runner.wait_until(predicate)
