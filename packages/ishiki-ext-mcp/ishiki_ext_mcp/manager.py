"""The host-wide manager of MCP servers: one supervised server per (profile, server, launch spec).

Runtimes of one profile share a server: the first runtime that uses it starts it (``acquire``), each
runtime that stops lets go of it (``release``), and the last one out stops it. The key holds a fingerprint
of the launch spec (command, args, env, cwd, url, headers), so after ``mcp.json`` changes, new runtimes get
a server started from the new spec while runtimes still running keep the old one until they stop.

The manager lives in the host's ``services`` (``SERVICE``), created on first use (``MCPManager.of``): services are
per host, so two hosts in one process (or two tests) never share servers, and nothing is global. A host
may create it itself with ``start_soon`` of its own task group, so supervisors run in the host's task
group rather than as loop-level service tasks (``ishiki_ext_mcp.service``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from ishiki_host import HostServices, ServiceKey

from ishiki_ext_mcp.names import sanitize
from ishiki_ext_mcp.runner import Backoff, ServerRunner
from ishiki_ext_mcp.service import ServiceTask, StartSoon, start_service

if TYPE_CHECKING:
    from ishiki_host import Clock

    from ishiki_ext_mcp.config import ServerSpec

__all__ = ["SERVICE", "MCPManager"]

SERVICE: ServiceKey[MCPManager]
"""Where a host's runtimes share the manager (``RuntimeContext.services``); defined after the class."""


@dataclass(eq=False)
class _Entry:
    key: tuple[str, str, str]
    runner: ServerRunner
    task: ServiceTask
    users: int = 0


class MCPManager:
    """Supervised servers keyed by (profile id, server name, spec fingerprint), counted by their users."""

    def __init__(self, *, start_soon: StartSoon | None = None, backoff: Backoff | None = None):
        self._start_soon = start_soon
        self._backoff = backoff or Backoff()
        self._entries: dict[tuple[str, str, str], _Entry] = {}

    @classmethod
    def of(cls, services: HostServices) -> MCPManager:
        """The host's manager in ``services``, created there on first use; its servers run in the host's task
        group when the host has one (``services.spawn``)."""

        def make() -> MCPManager:
            if not services.can_spawn:
                return cls()
            return cls(start_soon=lambda fn: services.spawn(fn, name="an MCP server"))

        return services.setdefault(SERVICE, make)

    @property
    def runners(self) -> tuple[ServerRunner, ...]:
        """Every server currently held by at least one runtime."""
        return tuple(entry.runner for entry in self._entries.values())

    def users(self, runner: ServerRunner) -> int:
        """How many runtimes hold ``runner`` (0 once it was let go)."""
        return next((e.users for e in self._entries.values() if e.runner is runner), 0)

    def acquire(self, profile_id: str, spec: ServerSpec, *, clock: Clock, data_dir: Path) -> ServerRunner:
        """The runner of ``spec`` for ``profile_id``, started now when no runtime holds it yet."""
        key = (profile_id, spec.name, spec.fingerprint())
        entry = self._entries.get(key)
        if entry is None:
            runner = ServerRunner(
                spec,
                clock=clock,
                stderr_log=Path(data_dir, "mcp", sanitize(profile_id), f"{sanitize(spec.name)}.stderr.log"),
                logger=logging.getLogger(f"ishiki.ext.mcp.{profile_id}.{spec.name}"),
                backoff=self._backoff,
            )
            task = start_service(f"{profile_id}/{spec.name}", runner.run, self._start_soon)
            entry = self._entries[key] = _Entry(key, runner, task)
        entry.users += 1
        return entry.runner

    async def release(self, runner: ServerRunner) -> None:
        """Let go of ``runner``; the last user out stops the server and waits for it (bounded, shielded)."""
        entry = next((e for e in self._entries.values() if e.runner is runner), None)
        if entry is None:
            return
        entry.users -= 1
        if entry.users > 0:
            return
        del self._entries[entry.key]
        await self._stop(entry)

    async def aclose(self) -> None:
        """Stop every server now, whoever holds it (the host is exiting)."""
        entries = list(self._entries.values())
        self._entries.clear()
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for entry in entries:
                    tg.start_soon(self._stop, entry)

    async def _stop(self, entry: _Entry) -> None:
        with anyio.CancelScope(shield=True):
            await entry.runner.stop()
            with anyio.move_on_after(1.0):
                await entry.task.done.wait()


SERVICE = ServiceKey("mcp", MCPManager)
