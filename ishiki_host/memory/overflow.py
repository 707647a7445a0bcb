"""What each ``session.summarizer`` mode does after a turn, and the compaction after a context overflow.

| mode | after a successful turn | session over ``compact_threshold`` | ``context_length`` failure |
|---|---|---|---|
| ``auto`` (default) | one memory of the exchange | — (every exchange is already condensed) | compact, retry once |
| ``manual`` | — | compact before the next turn (``sessions.threshold``) | compact, retry once |
| ``off`` | — | — | the error is shown |

``/compact`` works in every mode: someone asked for it. The threshold compaction is the runtime's (it runs
before a turn, see ``ishiki_host.sessions.threshold``); this module holds the reactive path.

``OverflowRecovery`` compacts with the failed turn's unanswered messages carried into the new session (see
``ishiki_host.sessions.manager``), then queues exactly one retry turn, also when there was nothing new to
compact (a compaction that landed just before already made the window as small as it gets: the retry tells
whether it fits). The retry's number is remembered, so when the retry overflows too, the next call only
surfaces the error. It posts a one-line notice to the channel (``notify``), and may not be called from inside a
turn: it waits for the agent to be idle. Run it in a task of the runtime.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ishiki_host.sessions.threshold import Notify

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.turns import TurnHandle, TurnOutcome
    from ishiki_host.sessions.manager import Sessions

__all__ = [
    "OVERFLOW_FAILED_NOTICE",
    "RETRY_NOTICE",
    "OverflowRecovery",
    "SessionPolicy",
    "TurnStarter",
    "unanswered_from",
]

logger = logging.getLogger(__name__)

RETRY_NOTICE = "(The conversation no longer fit my context window: I summarized it and am answering again.)"
OVERFLOW_FAILED_NOTICE = "(The conversation does not fit my context window, and summarizing it did not help: {why})"


class TurnStarter(Protocol):
    """What the retry needs of the agent: queue a turn."""

    async def continue_(
        self,
        prompt: str | None = None,
        *,
        reason: str | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> TurnHandle:
        """Queue a turn; see ``Agent.continue_``."""
        ...


@dataclass(frozen=True, slots=True)
class SessionPolicy:
    """What the runtime does around turns for one ``session.summarizer`` mode (see the module table)."""

    remember_turns: bool
    retry_on_overflow: bool

    @classmethod
    def for_mode(cls, mode: str) -> SessionPolicy:
        """The policy of ``auto``, ``manual`` or ``off``; ``ValueError`` for anything else."""
        policies = {
            "auto": cls(remember_turns=True, retry_on_overflow=True),
            "manual": cls(remember_turns=False, retry_on_overflow=True),
            "off": cls(remember_turns=False, retry_on_overflow=False),
        }
        if mode not in policies:
            raise ValueError(f"session.summarizer must be auto, manual or off; got {mode!r}")
        return policies[mode]


def unanswered_from(window: list[Entry], turn: int) -> int | None:
    """The id of the first entry turn ``turn`` had not answered: its first new inbound message, else its start.

    ``None`` when the turn did not run in this window (nothing to carry: compact everything).
    """
    start = next((e.id for e in window if e.turn == turn and e.name == "turn.start"), None)
    if start is None:
        return None
    previous = max((e.id for e in window if e.turn is not None and e.turn < turn), default=0)
    inbound = [e.id for e in window if previous < e.id < start and e.type == "message" and e.turn is None]
    return min(inbound, default=start)


class OverflowRecovery:
    """Compact-and-retry after a ``context_length`` failure, once per failure (one per runtime)."""

    def __init__(self, sessions: Sessions, agent: TurnStarter, notify: Notify):
        self._sessions = sessions
        self._agent = agent
        self._notify = notify
        self._retries: set[int] = set()

    def is_retry(self, turn: int) -> bool:
        """Whether turn ``turn`` is a retry this recovery queued."""
        return turn in self._retries

    async def handle(self, outcome: TurnOutcome) -> TurnHandle | None:
        """Handle a finished turn: on a ``context_length`` failure, compact and queue a retry (its handle).

        ``None`` when there is nothing to do (another outcome), when the turn was already a retry (the error
        is surfaced), or when compacting could not help (the notice says why).
        """
        if outcome.kind != "context_length":
            self._retries.discard(outcome.turn)
            return None
        if outcome.turn in self._retries:
            self._retries.discard(outcome.turn)
            await self._notify(OVERFLOW_FAILED_NOTICE.format(why=outcome.error))
            return None
        keep_from = unanswered_from(await self._sessions.window(), outcome.turn)
        change = await self._sessions.compact(reason="overflow", keep_from=keep_from, priority="interactive")
        if change.status not in ("compacted", "unchanged"):
            await self._notify(OVERFLOW_FAILED_NOTICE.format(why=change.message))
            return None
        await self._notify(RETRY_NOTICE)
        handle = await self._agent.continue_(None, reason="retry", info={"retry_of": outcome.turn})
        self._retries.add(handle.number)
        logger.info("turn %s overflowed; compacted and queued turn %s to retry", outcome.turn, handle.number)
        return handle
