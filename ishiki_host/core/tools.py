"""Tools: what the agent offers a model and runs when the model calls them.

A ``Tool`` is a name, a description, a JSON Schema for its arguments, the trust level it needs and an async
handler. The handler gets the parsed arguments and a ``ToolContext``; whatever it returns becomes the result
(strings as they are, anything else as JSON). A handler that raises becomes an error result and the turn goes
on. Trust levels are ordered ``untrusted < trusted < owner``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ishiki_host.core.messages import ToolCall
from ishiki_host.core.model import ToolSpec
from ishiki_host.jsontypes import Json

__all__ = [
    "TRUST_ORDER",
    "Tool",
    "ToolContext",
    "ToolHandler",
    "ToolResult",
    "TrustLevel",
    "render_result",
    "trust_allows",
]

TrustLevel = Literal["untrusted", "trusted", "owner"]
TRUST_ORDER: dict[str, int] = {"untrusted": 0, "trusted": 1, "owner": 2}


def trust_allows(level: TrustLevel, needed: TrustLevel) -> bool:
    """Whether a turn at ``level`` may use a tool that needs ``needed``."""
    return TRUST_ORDER[level] >= TRUST_ORDER[needed]


class ToolContext(Protocol):
    """What a running tool may know about its call. The runtime passes a richer object."""

    @property
    def call(self) -> ToolCall:
        """The call being run."""
        ...

    @property
    def turn(self) -> int | None:
        """The turn number, when inside a turn."""
        ...

    @property
    def trust(self) -> TrustLevel:
        """The trust level of the turn making the call (what work it schedules may run at, at most)."""
        ...


ToolHandler = Callable[[Mapping[str, Json], ToolContext], Awaitable[Json]]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's answer as the model will see it. ``data`` keeps the structured value for engines."""

    content: str
    is_error: bool = False
    data: Json = None

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """An error result."""
        return cls(content=message, is_error=True)


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the agent can offer. ``kind="send"`` marks tools whose successful calls may end a turn."""

    name: str
    description: str
    handler: ToolHandler
    parameters: Mapping[str, Json] = field(default_factory=lambda: {"type": "object", "properties": {}})
    trust: TrustLevel = "trusted"
    kind: Literal["action", "send", "control"] = "action"

    def spec(self) -> ToolSpec:
        """The model-facing spec."""
        return ToolSpec(self.name, self.description, self.parameters)


def render_result(value: Json) -> ToolResult:
    """Turn a handler's return value into a ``ToolResult`` (strings stay, others become JSON)."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=value, data=value)
    return ToolResult(content=json.dumps(value, ensure_ascii=False, default=str), data=value)
