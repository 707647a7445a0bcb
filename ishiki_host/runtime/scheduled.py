"""Work a turn schedules runs at most at that turn's trust level.

A wait, a beat a turn made, a ``RuntimeContext.wake`` called from a turn's tool calls (or from work they
started) start turns without new inbound messages, which would run at the runtime's home level (``trusted``
on every platform but the console) while the request that scheduled them is still in the window. So each of
them carries a ceiling in the trigger of the turn it starts (``trigger["trust"]``), and that turn runs at the
lowest of its own level (its new messages' senders, or the home level without any) and every ceiling among
its triggers (``capped``). A ceiling only lowers: no trigger raises a turn above what its messages allow.

The turn whose work is running is a context variable the turn tracker sets when a turn starts and clears
when it ends (``enter``/``leave``): tasks started from a tool call inherit it (a new task copies the context it
was started from), so a job an extension spawns from a tool still wakes at most at that turn's level.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, cast

from ishiki_host.core.tools import TRUST_ORDER
from ishiki_host.runtime.trust import lowest

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.runtime.turnstate import TurnState

__all__ = ["TRUST_CEILING", "capped", "ceiling_of", "enter", "leave", "running_level"]

TRUST_CEILING = "trust"
"""The key of a trigger that names the highest level its turn may run at."""

_RUNNING: ContextVar[TurnState | None] = ContextVar("ishiki_running_turn", default=None)


def enter(state: TurnState) -> None:
    """Mark ``state`` as the turn whose work runs in this context (and in the tasks started from it)."""
    _RUNNING.set(state)


def leave() -> None:
    """No turn's work runs in this context any more (its end was reached)."""
    _RUNNING.set(None)


def running_level() -> TrustLevel | None:
    """The level of the turn whose work is running here now, ``None`` outside any turn's work."""
    state = _RUNNING.get()
    return state.trust if state is not None else None


def ceiling_of(triggers: Iterable[Mapping[str, object]]) -> TrustLevel | None:
    """The lowest ceiling among a turn's triggers, ``None`` when none names one (unknown values are ignored)."""
    levels = [
        cast("TrustLevel", value)
        for value in (trigger.get(TRUST_CEILING) for trigger in triggers)
        if isinstance(value, str) and value in TRUST_ORDER
    ]
    return lowest(levels, "owner") if levels else None


def capped(level: TrustLevel, *ceilings: TrustLevel | None) -> TrustLevel:
    """``level`` lowered to the lowest of ``ceilings`` (``None`` ones ignored)."""
    return lowest([level, *(c for c in ceilings if c is not None)], level)
