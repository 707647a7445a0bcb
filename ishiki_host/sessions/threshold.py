"""The safety valve of ``session.summarizer: manual``: compact a session before a turn once it is large.

The seed's rule: before a turn, when the session's estimate is at or above ``compact_threshold`` × the model's
context window, compact first, then run the turn. The runtime runs ``compact_if_needed`` as the agent's
``before_turn`` work, so no turn runs meanwhile and the compaction is the only one (the sessions' lock orders
it with ``/compact`` and the overflow recovery). The turn's new messages are never folded into the summary:
the manager carries every message no turn has answered into the new session (``SessionManager(unanswered=)``),
so the turn answers them. The summary call is ``interactive``: someone is waiting for that turn, and a
background call would wait behind the scheduler's grace for as long as people keep writing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ishiki_host.sessions.summarizer import needs_compaction

if TYPE_CHECKING:
    from ishiki_host.sessions.manager import SessionChange, Sessions

__all__ = ["AUTO_COMPACT_NOTICE", "Notify", "compact_if_needed"]

Notify = Callable[[str], Awaitable[object]]
"""Posts a one-line notice to the runtime's channel."""

AUTO_COMPACT_NOTICE = "(The conversation got long, so I summarized it and started a fresh session.)"


async def compact_if_needed(
    sessions: Sessions, *, context_window: int, threshold: float, notify: Notify
) -> SessionChange | None:
    """Compact when the session's estimate reached ``threshold`` × ``context_window``; ``None`` when below."""
    size = await sessions.size()
    if not needs_compaction(size.tokens, context_window, threshold):
        return None
    change = await sessions.compact(reason="auto", priority="interactive")
    if change.status == "compacted":
        await notify(AUTO_COMPACT_NOTICE)
    elif change.status == "failed":
        await notify(f"(The conversation is getting long, but summarizing it failed: {change.message})")
    return change
