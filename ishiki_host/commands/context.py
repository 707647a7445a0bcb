"""What a command handler gets: ``CommandContext``, implemented by the runtime for each command message.

The context says who sent the command (``sender``, ``platform:userId``) at which trust level, where from
(``channel``), and gives the runtime (``runtime``: key, profile, agent, fact log, ``services["memory"]``),
the command table, the runtime's ``SessionManager`` and a ``HostView`` for what only the host knows (model
and breaker state, extension status lines, the tool surface). ``reply`` sends text to the channel the
command came from; a handler may use it for a progress line and return the final reply.

``Invocation`` is a ready-made implementation the runtime can fill in and pass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ishiki_host.commands.table import CommandTable
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.memory.sessions import SessionManager
    from ishiki_host.memory.store import MemoryStore
    from ishiki_host.plugins.runtime_api import RuntimeContext

__all__ = ["CommandContext", "HostView", "Invocation", "memory_store"]


class HostView(Protocol):
    """What the host reports to ``/status`` and ``/tools``."""

    async def model_status(self) -> Sequence[str]:
        """Lines about the profile's model: which model, its breaker state (``openai:gpt-4o: closed``)."""
        ...

    async def extension_status(self) -> Sequence[str]:
        """The ``ishiki_status`` lines of the runtime's extensions, in ``extends`` order."""
        ...

    async def tool_surface(self) -> Sequence[Tool]:
        """Every tool a turn of this runtime could offer, before plugin settings and trust filter them."""
        ...


class CommandContext(Protocol):
    """One command message, as its handler sees it (see the module docstring)."""

    @property
    def sender(self) -> str:
        """``platform:userId`` of who sent the command."""
        ...

    @property
    def trust(self) -> TrustLevel:
        """The sender's trust level (refused senders never reach commands)."""
        ...

    @property
    def channel(self) -> str:
        """Where the command came from: ``platform:selfId`` and the channel id (``telegram:bot1 private:42``)."""
        ...

    @property
    def runtime(self) -> RuntimeContext:
        """The runtime the command is for."""
        ...

    @property
    def table(self) -> CommandTable:
        """The runtime's command table."""
        ...

    @property
    def sessions(self) -> SessionManager:
        """The runtime's sessions (``/clear``, ``/compact``, ``/memory``)."""
        ...

    @property
    def host(self) -> HostView:
        """What only the host knows."""
        ...

    async def reply(self, text: str) -> None:
        """Send ``text`` to the channel the command came from."""
        ...


@dataclass(frozen=True, slots=True)
class Invocation:
    """A plain ``CommandContext``: the runtime fills it in; ``send`` delivers a reply to the channel."""

    sender: str
    trust: TrustLevel
    channel: str
    runtime: RuntimeContext
    table: CommandTable
    sessions: SessionManager
    host: HostView
    send: Callable[[str], Awaitable[object]]

    async def reply(self, text: str) -> None:
        """Send ``text`` through ``send``."""
        await self.send(text)


def memory_store(ctx: CommandContext) -> MemoryStore | None:
    """The host's memory store (``runtime.services["memory"]``), if it is open."""
    store = ctx.runtime.services.get("memory")
    return store if store is not None and hasattr(store, "memories") else None
