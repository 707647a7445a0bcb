"""``RuntimeView``: what ``/status`` and ``/tools`` show of a runtime that only the host knows.

- ``model_status``: the profile's model reference, then one line per member with its circuit breaker's state
  from the gateway (``fake:fake-model: breaker closed``; an open breaker says when it is probed again and its
  last error). A model without members (a test model) is shown by name.
- ``extension_status``: the ``ishiki_status`` lines of the extensions switched on, then which are off.
- ``channel_status``: what the runtime's channel connection set aside (``setAside`` and ``lastSetAside`` of
  its optional ``status()``, ``ishiki_host.channels.base``; nothing while it set nothing aside), and each
  account of a platform the profile claims that is down (failed for good, as with an expired token; crashed;
  waiting to restart), with its error: a profile that speaks on the console and on WhatsApp says on the
  console that its WhatsApp number stopped.
- ``tool_surface``: every tool a turn could be offered before switches and trust filter it (the owner's
  extra tools, the kernel tools, the extensions' tools, ``wait``), as ``/tools`` lists and switches them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ishiki_host.runtime.switches import enabled_extensions

if TYPE_CHECKING:
    from ishiki_host.channels.base import ChannelConnection
    from ishiki_host.core.tools import Tool
    from ishiki_host.plugins.runtime_api import RuntimeContext
    from ishiki_host.runtime.extensions import MountedExtensions

__all__ = ["RuntimeView", "breaker_line", "set_aside_line"]

_DOWN = ("failed", "crashed", "waiting")  # a supervisor's states in which the account takes no input
logger = logging.getLogger(__name__)


def breaker_line(member: str, status: Mapping[str, Any]) -> str:
    """One member's breaker state from ``CircuitBreaker.status()``."""
    line = f"  {member}: breaker {status.get('state', 'unknown')}"
    failures = status.get("failures")
    if isinstance(failures, int) and failures > 0:
        line += f", {failures} failure{'s' if failures != 1 else ''} in a row"
    probe = status.get("probe_in_seconds")
    if status.get("state") == "open" and isinstance(probe, int | float):
        line += f", probed again in {probe:.0f}s"
    error = status.get("last_error")
    if error and (status.get("state") != "closed" or failures):
        line += f" (last error: {error})"
    return line


def set_aside_line(label: str, status: Mapping[str, Any]) -> str | None:
    """``channel <label>: N inputs set aside (last: <id>, <why>)`` from a connection's ``status()``, or ``None``
    while it set nothing aside."""
    count = status.get("setAside")
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return None
    line = f"channel {label}: {count} input{'s' if count != 1 else ''} set aside"
    last = status.get("lastSetAside")
    if isinstance(last, Mapping):
        why = " ".join(str(last.get("why") or "").split())
        line += f" (last: {last.get('updateId')}{', ' + why if why else ''})"
    return line + "; see the channel's log"


class RuntimeView:
    """The ``HostView`` of one runtime (see the module docstring)."""

    def __init__(
        self,
        runtime: RuntimeContext,
        extensions: MountedExtensions,
        tools: Callable[[], Sequence[Tool]],
        wait: Callable[[], Tool | None],
        connection: Callable[[], ChannelConnection | None] = lambda: None,
        channels: Callable[[], Mapping[str, Mapping[str, Any]]] = dict,
    ):
        self._channels = channels
        self._rt = runtime
        self._extensions = extensions
        self._tools = tools
        self._wait = wait
        self._connection = connection

    async def model_status(self) -> Sequence[str]:
        """The model and its members' breaker states."""
        model = self._rt.model
        lines = [f"model: {model.name} (context window {self._rt.context_window:,} tokens)"]
        members = getattr(model, "members", None)
        breakers = getattr(getattr(model, "gateway", None), "breakers", None)
        if not isinstance(members, tuple) or not isinstance(breakers, Mapping):
            return lines
        for member in members:
            breaker = breakers.get(member)
            lines.append(breaker_line(member, breaker.status()) if breaker is not None else f"  {member}: no breaker")
        return lines

    async def _enabled(self) -> list[str]:
        names = self._extensions.names
        return await enabled_extensions(self._rt.services.memory, self._rt.profile.id, names)

    async def extension_status(self) -> Sequence[str]:
        """The status lines of the extensions switched on, and a line naming those switched off."""
        enabled = await self._enabled()
        lines = await self._extensions.status(only=enabled)
        off = [name for name in self._extensions.names if name not in enabled]
        if off:
            lines.append(f"extensions switched off: {', '.join(off)}")
        return lines

    async def channel_status(self) -> Sequence[str]:
        """What the runtime's connection set aside, then the accounts of the profile's platforms that are down."""
        return [*self._set_aside(), *self._down()]

    def _set_aside(self) -> list[str]:
        """The inputs the runtime's connection set aside, when it reports any (a cross-mode runtime has no one
        connection: nothing)."""
        report = getattr(self._connection(), "status", None)
        if not callable(report):
            return []
        try:
            status = report()
        except Exception:  # a status that fails must not take /status down with it
            logger.exception("the status() of %s's connection failed", self._rt.key.sid)
            return []
        sid = self._rt.key.sid
        line = set_aside_line(sid, status) if sid is not None and isinstance(status, Mapping) else None
        return [line] if line is not None else []

    def _down(self) -> list[str]:
        """The accounts of the profile's platforms that are down, with why."""
        platforms = set(self._rt.profile.claims.platforms())
        lines = []
        for label, state in sorted(self._channels().items()):
            if label.partition("#")[0] in platforms and state.get("state") in _DOWN:
                error = state.get("error")
                lines.append(f"channel {label}: {state.get('state')}" + (f" ({error})" if error else ""))
        return lines

    async def tool_surface(self) -> Sequence[Tool]:
        """Every tool a turn could offer before switches and trust filter it."""
        tools: list[Tool] = list(self._tools())
        for _, offered in await self._extensions.tools(only=await self._enabled()):
            tools.extend(offered)
        wait = self._wait()
        if wait is not None:
            tools.append(wait)
        return tools
