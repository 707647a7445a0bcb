"""What a person's turn is doing, for the connection that shows it (the console's thinking line).

``TurnActivities`` follows one runtime's bus in the ``react`` phase (after the tracker has opened the turn's
state in ``track``) and hands a ``TurnActivity`` to the optional ``show_activity(channel_id, activity)`` of
the connection the turn answers (its newest inbound message's channel, as typing uses):

- ``turn.start``: ``thinking`` at step 1, with the profile's model name;
- ``tool.start``: ``tool``, naming the tool; ``tool.done`` / ``tool.failed`` / ``tool.blocked``: ``thinking``;
- ``turn.step``: ``thinking`` at the next step, naming the model that answered the step (who answers next,
  most likely, and what the operator wants to see after a failover);
- ``turn.done`` / ``turn.failed`` / ``turn.aborted``: ``done``.

Only interactive turns with a target are shown (a heartbeat's turn has no one waiting). A connection without
``show_activity`` is skipped; one whose ``show_activity`` raises is logged and the turn goes on. The
connection is looked up at every call, so a connection restarted mid-turn gets the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ishiki_host.channels.base import TurnActivity, TurnActivityState

if TYPE_CHECKING:
    from ishiki_host.addresses.ids import Target
    from ishiki_host.core.bus import BusEvent, EventBus
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.turns import Step, Turn
    from ishiki_host.runtime.outbound import Outlets

__all__ = ["TurnActivities"]

logger = logging.getLogger("ishiki_host.runtime.activity")

_TOOL_ENDS = ("tool.done", "tool.failed", "tool.blocked")
_TURN_ENDS = ("turn.done", "turn.failed", "turn.aborted")


class TurnActivities:
    """Shows the running turn's activity on its target's connection (see the module docstring)."""

    def __init__(self, outlets: Outlets, clock: Clock, model: str | None, target: Callable[[], Target | None]):
        self._outlets = outlets
        self._clock = clock
        self._model = model
        self._target = target
        self._shown: tuple[Target, TurnActivity] | None = None  # the running turn's target and last activity

    def subscribe(self, bus: EventBus) -> None:
        """Follow the turn events of ``bus`` (``react`` phase)."""
        bus.subscribe("turn.start", self._on_start)
        bus.subscribe("turn.step", self._on_step)
        bus.subscribe("tool.start", self._on_tool)
        for name in _TOOL_ENDS:
            bus.subscribe(name, self._on_tool_end)
        for name in _TURN_ENDS:
            bus.subscribe(name, self._on_end)

    def _on_start(self, event: BusEvent) -> None:
        turn: Turn = event["turn"]
        target = self._target() if turn.priority == "interactive" else None
        self._shown = None
        if target is not None:
            self._show(target, TurnActivity("thinking", self._clock.now(), self._model, step=1))

    def _on_step(self, event: BusEvent) -> None:
        step: Step = event["step"]
        answered = step.result.model if step.result is not None and step.result.model else None
        self._move("thinking", model=answered, step=step.index + 1)

    def _on_tool(self, event: BusEvent) -> None:
        self._move("tool", tool=event["call"].name)

    def _on_tool_end(self, event: BusEvent) -> None:
        self._move("thinking")

    def _on_end(self, event: BusEvent) -> None:
        self._move("done")
        self._shown = None

    def _move(
        self, state: TurnActivityState, *, model: str | None = None, tool: str | None = None, step: int | None = None
    ) -> None:
        if self._shown is None:
            return
        target, last = self._shown
        activity = replace(
            last,
            state=state,
            tool=tool,
            model=model or last.model,
            step=last.step if step is None else step,
        )
        self._show(target, activity)

    def _show(self, target: Target, activity: TurnActivity) -> None:
        self._shown = (target, activity)
        show = getattr(self._outlets.connection(target.sid), "show_activity", None)
        if not callable(show):
            return
        try:
            show(target.channel_id, activity)
        except Exception:
            logger.warning("showing the turn's activity on %s failed", target, exc_info=True)
