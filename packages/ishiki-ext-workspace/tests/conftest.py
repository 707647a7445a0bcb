"""Fixtures of the workspace tests: a workspace mounted on a real runtime harness, and a directory outside it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ishiki_ext_workspace import CONFIG_SCHEMA, Workspace, WorkspaceExtension
from jsonschema import Draft202012Validator

from ishiki_host import Clock, ToolCall, ToolResult, with_defaults
from ishiki_host.testing import CallContext, RuntimeHarness, ScriptedModel

if not sys.platform.startswith(("linux", "darwin", "freebsd")):
    pytest.skip("the workspace needs POSIX dir_fd support", allow_module_level=True)


@dataclass
class Opened:
    """A workspace mounted on a harness; ``call`` runs a tool as the agent would (arguments checked first)."""

    rt: RuntimeHarness
    ws: Workspace

    @property
    def root(self) -> Path:
        return Path(self.ws.settings.root.path)

    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.ws.ishiki_tools()]

    async def call(self, name: str, **arguments: Any) -> ToolResult:
        tool = next(t for t in self.ws.ishiki_tools() if t.name == name)
        Draft202012Validator(dict(tool.parameters)).validate(arguments)
        context = CallContext(call=ToolCall("call_1", name, arguments), turn=1, step=0)
        result = await tool.handler(arguments, context)
        assert isinstance(result, ToolResult)
        return result

    async def ok(self, name: str, **arguments: Any) -> ToolResult:
        result = await self.call(name, **arguments)
        assert not result.is_error, result.content
        return result

    async def refused(self, name: str, **arguments: Any) -> ToolResult:
        result = await self.call(name, **arguments)
        assert result.is_error, result.content
        return result


OpenWorkspace = Callable[..., AbstractAsyncContextManager[Opened]]


def checked_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` validated against the extension's schema, with its defaults (as the profile loader does)."""
    Draft202012Validator(dict(CONFIG_SCHEMA)).validate(dict(config))
    return dict(with_defaults(CONFIG_SCHEMA, dict(config)))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The runtime home (the harness's data directory too)."""
    return tmp_path / "home"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside every mount, holding ``secret.txt``."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("TOP SECRET\n", encoding="utf-8")
    return path


@pytest.fixture
def open_workspace(home: Path) -> OpenWorkspace:
    """``async with open_workspace({...config}) as opened``: a workspace attached to a running harness."""

    @asynccontextmanager
    async def open_(config: Mapping[str, Any] | None = None, *, clock: Clock | None = None) -> AsyncIterator[Opened]:
        async with RuntimeHarness(home, model=ScriptedModel([]), clock=clock) as rt:
            ws = WorkspaceExtension().create(rt.context, checked_config(config or {}))
            await rt.mount_extension(ws)
            yield Opened(rt, ws)

    return open_
