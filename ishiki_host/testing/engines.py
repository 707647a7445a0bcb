"""Minimal engines for tests of extensions, channels and hosts, where the built-in engines' judgement would
only get in the way:

- ``EveryMessageWakeup``: starts a turn for every inbound ``message.created`` appended outside a turn, and
  for every entry handed to ``reconsider`` (after a crash, or messages a turn never saw);
- ``PlainContext``: the agent's default window and projection, no instructions;
- ``PassthroughToolcall``: the model unwrapped, no hooks, no instructions.

Register them with ``ishiki_host.testing.registry_with`` (or through entry points of a test distribution).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ishiki_host.core.hooks import AgentHooks
from ishiki_host.engines.toolcall.native import NativeToolcall
from ishiki_host.plugins.base import ContextEngine, ToolcallEngine, WakeupEngine

if TYPE_CHECKING:
    from ishiki_host.config.services import PluginConfig
    from ishiki_host.core.bus import BusEvent
    from ishiki_host.core.entries import Entry
    from ishiki_host.plugins.runtime_api import (
        ContextEngineInstance,
        Dispose,
        RuntimeContext,
        ToolcallEngineInstance,
        WakeupEngineInstance,
    )

__all__ = ["EveryMessageWakeup", "PassthroughToolcall", "PlainContext"]


def _wakes(entry: Entry) -> bool:
    source = entry.data.get("source")
    return (
        entry.type == "message"
        and entry.data.get("role") == "user"
        and isinstance(source, Mapping)
        and source.get("kind", "message.created") == "message.created"
    )


class _EveryMessage:
    def __init__(self, ctx: RuntimeContext):
        self.ctx = ctx
        self.decided: list[int] = []

    def attach(self, ctx: RuntimeContext) -> Dispose:
        return ctx.bus.subscribe("message.appended", self._appended)

    async def _appended(self, event: BusEvent) -> None:
        if not event["joined"]:
            await self._decide(event["entry"])

    async def reconsider(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            await self._decide(entry)

    async def _decide(self, entry: Entry) -> None:
        if _wakes(entry):
            self.decided.append(entry.id)
            await self.ctx.agent.continue_(None, reason="message", info={"entry": entry.id})


class EveryMessageWakeup(WakeupEngine):
    """A turn for every inbound message (see the module docstring)."""

    def create(self, ctx: RuntimeContext, config: PluginConfig) -> WakeupEngineInstance:
        """The instance for one runtime."""
        return _EveryMessage(ctx)


class _Plain:
    def __init__(self) -> None:
        self._hooks = AgentHooks()

    def hooks(self) -> AgentHooks:
        return self._hooks

    async def instructions(self) -> str | None:
        return None


class PlainContext(ContextEngine):
    """The agent's default window (see the module docstring)."""

    def create(self, ctx: RuntimeContext, config: PluginConfig) -> ContextEngineInstance:
        """The instance for one runtime."""
        return _Plain()


class PassthroughToolcall(ToolcallEngine):
    """The model's native tool calling, unwrapped (see the module docstring)."""

    def create(self, ctx: RuntimeContext, config: PluginConfig) -> ToolcallEngineInstance:
        """The instance for one runtime."""
        return NativeToolcall()  # the built-in native engine's instance, without its option checks
