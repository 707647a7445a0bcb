"""A context engine that keeps only the current turn, so a benchmark's model requests stay the same size.

Register it as ``{"ishiki.engine.context.current": CurrentTurnContext}`` and select it with
``context: {engine: current}``: every step's window starts at the newest inbound user message.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog_contract import FactLogProtocol
from ishiki_host.core.hooks import AgentHooks
from ishiki_host.core.turns import Step
from ishiki_host.plugins.base import ContextEngine


def _current_turn(newest_first: Iterator[Entry]) -> list[Entry]:
    window: list[Entry] = []
    for entry in newest_first:
        window.append(entry)
        if entry.type == "message" and entry.data.get("role") == "user" and "source" in entry.data:
            break
    window.reverse()
    return window


class _CurrentTurn(AgentHooks):
    async def select_entries(self, log: FactLogProtocol, step: Step) -> list[Entry]:
        return await log.read_back(_current_turn)

    def hooks(self) -> AgentHooks:
        return self

    async def instructions(self) -> str | None:
        return None


class CurrentTurnContext(ContextEngine):
    """A context of the current turn only (benchmark requests stay the same size)."""

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        return _CurrentTurn()


def current_turn_profile(profile: str) -> str:
    """``profile`` (a ``profile_yaml()``) with the plain test context swapped for this one."""
    return profile.replace("context: {engine: plain}", "context: {engine: current}")
