"""``/stop``: end the running turn now, as ``turn.aborted``, with a reason naming who stopped it.

Commands are answered by the runtime's command layer before anything is ingested (``runtime.gate``), so a
``/stop`` sent while a turn runs is answered at once, never queued behind the turn it stops. Turns queued
behind the running one are left alone: they answer messages nobody took back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host.plugins.commands import CommandContext

__all__ = ["NOTHING_TO_STOP", "STOPPED", "stop_command"]

STOPPED = "Stopped."
NOTHING_TO_STOP = "Nothing to stop."


async def stop_command(ctx: CommandContext, args: str) -> str:
    """``/stop``: abort the running turn (``stopped by <sender>`` in the fact log); say so, or that none runs."""
    stopped = ctx.runtime.agent.abort(f"stopped by {ctx.sender} (/stop)")
    return STOPPED if stopped else NOTHING_TO_STOP
