"""What a runtime holds once it has started: its open parts (``Started``) and its engine instances (``Engines``).

``create_engines(parts, ctx)`` makes the three engine instances of a profile's parts for one runtime (a failure
names the engine) and hands them back; nothing is set on the runtime. The runtime keeps them, with the fact
log, resources, outbox, agent and sessions it opened, in one ``Started`` value.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ishiki_host.core.agent import Agent
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.tools import Tool
    from ishiki_host.plugins.runtime_api import (
        ContextEngineInstance,
        RuntimeContext,
        ToolcallEngineInstance,
        WakeupEngineInstance,
    )
    from ishiki_host.resources import RuntimeResources
    from ishiki_host.runtime.images import ImageResolver
    from ishiki_host.runtime.outbound import RuntimeOutbox
    from ishiki_host.runtime.parts import EngineUse, ProfileParts
    from ishiki_host.sessions.manager import SessionManager

__all__ = ["Engines", "Started", "create_engines"]

BackgroundTask = Callable[..., Coroutine[Any, Any, None]]
"""An engine's ``run(*, task_status)``: background work it owns for the runtime's life."""


@dataclass(frozen=True, slots=True)
class Engines:
    """The engine instances of one runtime (``None`` where the parts name no engine: tests)."""

    context: ContextEngineInstance | None = None
    toolcall: ToolcallEngineInstance | None = None
    wakeup: WakeupEngineInstance | None = None

    def background_tasks(self) -> list[BackgroundTask]:
        """Each engine's own ``async run(*, task_status)``, if it has one (summaries, judges)."""
        found = []
        for engine in (self.context, self.toolcall, self.wakeup):
            run = getattr(engine, "run", None)
            if run is not None and inspect.iscoroutinefunction(run):
                found.append(run)
        return found

    @property
    def text_is_reply(self) -> bool:
        """Whether text the model writes outside tool calls is meant for the person (the toolcall engine's
        ``text_is_reply``, true unless it says otherwise)."""
        return getattr(self.toolcall, "text_is_reply", True) is not False


@dataclass(frozen=True, slots=True)
class Started:
    """What a runtime opened at its start (see the module docstring)."""

    log: FactLogProtocol
    resources: RuntimeResources
    outbox: RuntimeOutbox
    images: ImageResolver
    kernel: tuple[Tool, ...]
    wait: Tool
    engines: Engines
    agent: Agent
    sessions: SessionManager


def create_engines(parts: ProfileParts, ctx: RuntimeContext) -> Engines:
    """The engine instances of ``parts`` for the runtime ``ctx``; ``RuntimeError`` naming the engine that failed."""
    return Engines(
        context=_create("context", parts.context, ctx),
        toolcall=_create("toolcall", parts.toolcall, ctx),
        wakeup=_create("wakeup", parts.wakeup, ctx),
    )


def _create(kind: str, use: EngineUse | None, ctx: RuntimeContext) -> Any:
    if use is None:
        return None
    try:
        return use.provider.create(ctx, use.config)
    except Exception as exc:
        raise RuntimeError(f"{kind} engine {use.name!r} failed to create its instance: {exc}") from exc
