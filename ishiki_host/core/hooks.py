"""Hook points of the agent loop, for engines (extensions never get these).

Subclass ``AgentHooks`` and override what you need; every method has a harmless default. An agent takes a
sequence of hook objects and composes them in that order:

- ``select_entries`` and ``project`` have one owner: at most one hook object may override each (a second
  raises ``ValueError`` when the agent is built). Without an owner, the defaults of ``core.window`` apply;
  an owner may call ``super()`` to start from them.
- ``transform_entries``, ``transform_messages`` and ``after_tool_call`` chain: each hook gets the previous
  hook's output.
- ``prepare_step`` runs for every hook; each may narrow ``step.tools`` or set ``step.tool_choice`` and the
  call settings, seeing what earlier hooks did.
- ``before_tool_call`` and ``on_step_finish``: the first hook that returns a decision (not ``None``) decides;
  later hooks are not asked.
- ``on_turn_finish`` runs for every hook; an exception there is logged, never fatal.

An exception raised by any other hook fails the turn (``turn.failed`` naming the exception class).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ishiki_host.core.tools import ToolResult
from ishiki_host.core.window import project_entries, select_session_window

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.messages import Message, ToolCall
    from ishiki_host.core.turns import Step, TurnOutcome

__all__ = ["AgentHooks", "Block", "HookChain", "Replace", "StepDecision", "Stop", "ToolDecision"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Block:
    """Refuse a tool call: it is not run, ``tool.blocked`` is emitted and the model sees ``reason`` as an error."""

    reason: str


@dataclass(frozen=True, slots=True)
class Replace:
    """Answer a tool call with ``result`` instead of running the tool."""

    result: ToolResult


@dataclass(frozen=True, slots=True)
class Stop:
    """End the turn after this step; ``reason`` goes into ``turn.done`` (``finish``, ``sent``, ...)."""

    reason: str = "stop_hook"


ToolDecision = Block | Replace | None
StepDecision = Literal["continue", "stop"] | Stop | None
"""``"stop"`` is ``Stop("stop_hook")``; ``"continue"`` runs another step even without tool calls."""


class AgentHooks:
    """Base class of engine hooks; every method is a no-op default (see the module docstring for composition)."""

    async def select_entries(self, log: FactLogProtocol, step: Step) -> list[Entry]:
        """The entries forming this step's window, oldest first. Default: the current session, O(window)."""
        return await log.read_back(select_session_window)

    async def transform_entries(self, entries: list[Entry], step: Step) -> list[Entry]:
        """Rewrite the window's entries before projection (never the log: facts are not edited)."""
        return entries

    async def project(self, entries: list[Entry], step: Step) -> list[Message]:
        """Turn the window into model messages (the system prompt is added after this)."""
        return project_entries(entries)

    async def transform_messages(self, messages: list[Message], step: Step) -> list[Message]:
        """Rewrite the messages of the request; the first one is the turn's system prompt when it has one."""
        return messages

    async def prepare_step(self, step: Step) -> None:
        """Adjust the step before the model call: narrow ``step.tools``, set ``step.tool_choice``..."""

    async def before_tool_call(self, call: ToolCall, step: Step) -> ToolDecision:
        """Allow (``None``), ``Block(reason)`` or ``Replace(result)`` a call before it runs."""
        return None

    async def after_tool_call(self, call: ToolCall, result: ToolResult, step: Step) -> ToolResult:
        """Rewrite a call's result before it is logged and shown to the model."""
        return result

    async def on_step_finish(self, step: Step) -> StepDecision:
        """Decide after a step: ``None`` keeps the default (stop when the model called no tool)."""
        return None

    async def on_turn_finish(self, outcome: TurnOutcome) -> None:
        """Observe a turn's end (after its last entry is durable)."""


class HookChain:
    """Hook objects composed in order, as the agent calls them."""

    def __init__(self, hooks: Sequence[AgentHooks]):
        self.hooks = tuple(hooks)
        self._selector = _owner(self.hooks, "select_entries")
        self._projector = _owner(self.hooks, "project")

    async def select_entries(self, log: FactLogProtocol, step: Step) -> list[Entry]:
        """The owner's window."""
        return list(await self._selector.select_entries(log, step))

    async def transform_entries(self, entries: list[Entry], step: Step) -> list[Entry]:
        """Every hook's ``transform_entries``, chained."""
        for hook in self.hooks:
            entries = list(await hook.transform_entries(entries, step))
        return entries

    async def project(self, entries: list[Entry], step: Step) -> list[Message]:
        """The owner's projection."""
        return list(await self._projector.project(entries, step))

    async def transform_messages(self, messages: list[Message], step: Step) -> list[Message]:
        """Every hook's ``transform_messages``, chained."""
        for hook in self.hooks:
            messages = list(await hook.transform_messages(messages, step))
        return messages

    async def prepare_step(self, step: Step) -> None:
        """Every hook's ``prepare_step``, in order."""
        for hook in self.hooks:
            await hook.prepare_step(step)

    async def before_tool_call(self, call: ToolCall, step: Step) -> ToolDecision:
        """The first decision a hook returns."""
        for hook in self.hooks:
            decision = await hook.before_tool_call(call, step)
            if decision is not None:
                return decision
        return None

    async def after_tool_call(self, call: ToolCall, result: ToolResult, step: Step) -> ToolResult:
        """Every hook's ``after_tool_call``, chained."""
        for hook in self.hooks:
            result = await hook.after_tool_call(call, result, step)
        return result

    async def on_step_finish(self, step: Step) -> StepDecision:
        """The first decision a hook returns."""
        for hook in self.hooks:
            decision = await hook.on_step_finish(step)
            if decision is not None:
                return decision
        return None

    async def on_turn_finish(self, outcome: TurnOutcome) -> None:
        """Every hook's ``on_turn_finish``; failures are logged."""
        for hook in self.hooks:
            try:
                await hook.on_turn_finish(outcome)
            except Exception:
                logger.exception("on_turn_finish of %r failed (turn %s)", hook, outcome.turn)


def _owner(hooks: tuple[AgentHooks, ...], method: str) -> AgentHooks:
    base = getattr(AgentHooks, method)
    owners = [hook for hook in hooks if getattr(type(hook), method) is not base]
    if len(owners) > 1:
        names = ", ".join(type(hook).__name__ for hook in owners)
        raise ValueError(f"only one hook object may override {method}; these do: {names}")
    return owners[0] if owners else AgentHooks()
