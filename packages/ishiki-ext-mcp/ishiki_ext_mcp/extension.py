"""The ``mcp`` extension (``ishiki.ext.mcp``): tools and resources of MCP servers for a persona.

Per runtime, ``ishiki_attach`` reads the profile's ``mcp.json`` (``ishiki_ext_mcp.config``), takes the
selected servers from the host's ``MCPManager`` (starting those no runtime of the profile holds yet), serves
``mcp://`` in the runtime's resource center and waits for each server's first start attempt, so the first
turn already has the tools of every server that came up. Each turn offers the tools of the servers that are
ready (or restarting with a known listing); ``/status`` says how every server is doing and why one is not;
``ishiki_stop`` lets go of the servers (the last runtime out stops them).

A server that cannot start, or whose entry in ``mcp.json`` is wrong, leaves its tools absent and the
persona working: the reason is logged and shown by ``/status``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
from ishiki_host import Extension, format_resource_url, hookimpl

from ishiki_ext_mcp.config import MCP_FILE, MCPConfig, load_mcp_config
from ishiki_ext_mcp.manager import MCPManager
from ishiki_ext_mcp.resources import SCHEME, SCHEME_TRUST, MCPResources, count, resource_url
from ishiki_ext_mcp.tools import make_tools

if TYPE_CHECKING:
    from collections.abc import Callable

    from ishiki_host import CheckContext, RuntimeContext, Tool
    from ishiki_host.errors import ConfigError

    from ishiki_ext_mcp.listing import Listing
    from ishiki_ext_mcp.runner import ServerRunner

__all__ = ["MCPExtension", "MCPInstance"]

_INSTRUCTIONS_CHARS = 2000
_RESOURCES_LISTED = 20


class MCPExtension(Extension):
    """Model Context Protocol servers: their tools as ``<server>__<tool>``, their resources as ``mcp://``.

    Servers are declared in ``mcp.json`` (config dir root, or ``profiles/<id>/mcp.json`` to replace it for
    one profile); ``servers`` picks some of them for this profile.
    """

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "properties": {
            "servers": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "uniqueItems": True,
                "description": "Names of mcp.json servers this profile uses; all of them when left out.",
            }
        },
        "additionalProperties": False,
    }

    def create(self, ctx: Any, config: Mapping[str, Any]) -> MCPInstance:
        """The extension's instance for one runtime."""
        return MCPInstance(ctx, _selection(config))

    def check(self, ctx: CheckContext, config: Mapping[str, Any]) -> Sequence[ConfigError]:
        """What is wrong with the profile's ``mcp.json`` and its ``servers`` selection (for ``ishiki check``):
        the file's errors and each unusable server's, as ``ishiki run`` would log them. Reads the file only."""
        loaded = load_mcp_config(ctx.config_dir, ctx.profile.directory, _selection(config), ctx.env)
        return [*loaded.errors, *loaded.failed.values()]


def _selection(config: Mapping[str, Any]) -> tuple[str, ...] | None:
    servers = config.get("servers")
    return tuple(servers) if servers is not None else None


class MCPInstance:
    """One runtime's view of its MCP servers (hook implementations)."""

    def __init__(self, ctx: RuntimeContext, servers: Sequence[str] | None = None):
        self._ctx = ctx
        self._selection = servers
        self._config = MCPConfig(None)
        self._manager: MCPManager | None = None
        self._runners: dict[str, ServerRunner] = {}
        self._tools: dict[str, tuple[Listing, list[Tool]]] = {}
        self._deregister: Callable[[], None] | None = None
        self._instructions: tuple[tuple[Listing, ...], str | None] = ((), None)

    @property
    def runners(self) -> Mapping[str, ServerRunner]:
        """This runtime's servers by name (those its config let start)."""
        return self._runners

    @property
    def config(self) -> MCPConfig:
        """The loaded configuration (with its problems)."""
        return self._config

    @hookimpl
    async def ishiki_attach(self, runtime: RuntimeContext) -> Callable[[], Any]:
        """Load ``mcp.json``, take the servers, serve ``mcp://`` and wait for the first start attempts."""
        ctx = self._ctx
        self._config = await anyio.to_thread.run_sync(
            load_mcp_config, ctx.config_dir, ctx.profile.directory, self._selection
        )
        self._log_config_problems()
        self._manager = MCPManager.of(ctx.services)
        for spec in self._config.servers:
            runner = self._manager.acquire(ctx.profile.id, spec, clock=ctx.clock, data_dir=ctx.data_dir)
            self._runners[spec.name] = runner
        handler = MCPResources(lambda: self._runners)
        self._deregister = ctx.resources.register(SCHEME, handler, owner="mcp", trust=SCHEME_TRUST)
        async with anyio.create_task_group() as tg:
            for runner in self._runners.values():
                tg.start_soon(runner.first_attempt)
        return self._close

    def _log_config_problems(self) -> None:
        logger = self._ctx.logger
        for error in self._config.errors:
            logger.error("mcp: %s", error.describe())
        for name, error in self._config.failed.items():
            logger.error("mcp: server %s not started: %s", name, error.describe())
        for warning in self._config.warnings:
            logger.warning("mcp: %s", warning)

    @hookimpl
    def ishiki_tools(self) -> list[Tool]:
        """The tools of every server that is ready (or restarting with a known listing)."""
        tools: list[Tool] = []
        for name, runner in self._runners.items():
            if not runner.offers_tools:
                continue
            cached = self._tools.get(name)
            if cached is None or cached[0] is not runner.listing:
                cached = (runner.listing, make_tools(runner))
                self._tools[name] = cached
            tools.extend(cached[1])
        return tools

    @hookimpl
    def ishiki_instructions(self) -> str | None:
        """A section naming the servers, their own instructions and their resources (cached per listing)."""
        live = [runner for runner in self._runners.values() if runner.offers_tools]
        key = tuple(runner.listing for runner in live)
        cached = self._instructions[0]
        if len(key) != len(cached) or any(a is not b for a, b in zip(key, cached, strict=True)):
            self._instructions = (key, _instructions(live))
        return self._instructions[1]

    @hookimpl
    def ishiki_status(self) -> list[str]:
        """One line per server: how it is doing, or why it is not running."""
        config = self._config
        lines = [f"mcp: {error.describe()}" for error in config.errors]
        now = self._ctx.clock.now()
        lines += [f"mcp {name}: {_runner_status(runner, now)}" for name, runner in self._runners.items()]
        lines += [f"mcp {name}: not started: {error.describe()}" for name, error in config.failed.items()]
        lines += [f"mcp {name}: disabled in {config.file}" for name in config.disabled]
        if config.file is None and not config.errors:
            lines.append(f"mcp: no {MCP_FILE} in {self._ctx.config_dir}")
        return lines

    @hookimpl
    async def ishiki_stop(self) -> None:
        """Let go of the servers (the last runtime of the profile out stops them)."""
        await self._close()

    async def _close(self) -> None:
        if self._deregister is not None:
            self._deregister()
            self._deregister = None
        runners, self._runners = list(self._runners.values()), {}
        manager = self._manager
        if manager is None or not runners:
            return
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for runner in runners:
                    tg.start_soon(manager.release, runner)


def _runner_status(runner: ServerRunner, now: float) -> str:
    listing = runner.listing
    if runner.state == "ready":
        counts = f"{count(len(listing.tools), 'tool')}, {count(len(listing.resources), 'resource')}"
        restarts = f", restarted {runner.starts - 1}x" if runner.starts > 1 else ""
        return f"ready, {counts} ({runner.info_text()}{restarts})"
    if runner.state in ("restarting", "failed"):
        retry = ""
        if runner.next_attempt is not None:
            retry = f"; next attempt in {max(0.0, runner.next_attempt - now):.0f} s"
        return f"{runner.state}: {runner.error}{retry}"
    return runner.state


def _instructions(runners: Sequence[ServerRunner]) -> str | None:
    sections = []
    for runner in runners:
        listing = runner.listing
        parts = []
        if listing.instructions:
            parts.append(listing.instructions.strip()[:_INSTRUCTIONS_CHARS])
        if listing.resources:
            shown = listing.resources[:_RESOURCES_LISTED]
            parts.append("Resources (use read):")
            parts += [f"- {resource_url(runner.name, r.uri)} {r.title or r.name}" for r in shown]
            if len(listing.resources) > len(shown):
                more = len(listing.resources) - len(shown)
                parts.append(f"- … {more} more: read {format_resource_url(SCHEME, [runner.name])}")
        if parts:
            sections.append(f"### {runner.name}\n" + "\n".join(parts))
    if not sections:
        return None
    head = "## MCP servers\nTools named <server>__<tool> come from these Model Context Protocol servers."
    return "\n\n".join([head, *sections])
