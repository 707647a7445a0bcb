"""How host plugins reach the live runtimes of a host, wherever they run: ``RuntimeViews``.

A host plugin reads a live runtime's fact log through a ``RuntimeLogView`` (``HostPluginContext.runtime_log``)
and lists its tools (``HostPluginContext.tools``). In one process the runtimes are here, and ``LocalViews``
answers from them: a ``FactLogView`` (``ishiki_host.plugins.logview``) over the runtime's own ``FactLog``.
Under ``ishiki run --workers N`` the host plugins run in the supervisor and the runtimes in the workers: the
supervisor's ``HostRole.views`` answers over the links instead (``ishiki_host.workers.views``), with the same
types, so a plugin reads both the same way.

``live_runtime`` is the one meaning of "alive" both use: a runtime of an active profile whose state is
``ready``, whose log is open; never spawned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ishiki_host.plugins.logview import FactLogView

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.tools import Tool
    from ishiki_host.host.host import Host
    from ishiki_host.plugins.hostplugin import RuntimeLogView
    from ishiki_host.runtime.runtime import AgentRuntime

__all__ = ["LocalViews", "RuntimeViews", "live_runtime"]


class RuntimeViews(Protocol):
    """What host plugins read of the live runtimes (see the module docstring)."""

    async def log(self, key: RuntimeKey) -> RuntimeLogView | None:
        """The fact log of the live runtime ``key``, read-only; ``None`` when it is not running."""
        ...

    async def tools(self, key: RuntimeKey) -> Sequence[Tool] | None:
        """The tool surface of the live runtime ``key``; ``None`` when it is not running."""
        ...


class LocalViews:
    """``RuntimeViews`` over the runtimes of ``host`` itself (one process)."""

    def __init__(self, host: Host):
        self._host = host

    async def log(self, key: RuntimeKey) -> RuntimeLogView | None:
        """A ``FactLogView`` of the live runtime ``key``, or ``None``."""
        runtime = live_runtime(self._host, key)
        return FactLogView(key, runtime.context.log) if runtime is not None else None

    async def tools(self, key: RuntimeKey) -> Sequence[Tool] | None:
        """The live runtime's tool surface, or ``None``."""
        runtime = live_runtime(self._host, key)
        return await runtime.tool_surface() if runtime is not None else None


def live_runtime(host: Host, key: RuntimeKey) -> AgentRuntime | None:
    """The runtime ``key`` of an active profile of ``host`` while it is ready and its log open (never spawned),
    else ``None``."""
    route = host.routes.get(key.profile)
    runtime = route.runtimes.get(key) if route is not None else None
    if runtime is None or runtime.state != "ready" or runtime.context.log.closed:
        return None
    return runtime
