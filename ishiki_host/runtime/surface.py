"""The tool surface of a turn, assembled by a small pipeline of named stages.

Each stage takes the tools so far and returns the new list (adding, hiding or wrapping tools). The default
pipeline is ``extra`` (tools a test or host adds) → ``kernel`` (read, send_message, finish) → ``extensions``
(each extension's ``ishiki_tools``, in ``extends`` order) → ``wait``. When the profile turns them on, the
*disclosure* stages come last (``DISCLOSURE_STAGES``): ``toolsearch`` defers non-resident tools behind
``search``, then ``codemode`` moves tools into its program tool (``ishiki_host.runtime.disclosure``). They
must see the final tool set, so a stage added without an anchor goes before them, and a stage that filters
tools (plugin switches, trust) should never be anchored after them. ``assemble(..., disclose=False)`` skips
them: every tool a turn could reach, as ``/tools`` lists them.

Two tools with one name raise ``ToolConflictError`` naming where each came from; the agent fails the turn
with it (and ``ishiki check`` reports static conflicts).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ishiki_host.errors import ToolConflictError

if TYPE_CHECKING:
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.core.turns import Turn

__all__ = ["DISCLOSURE_STAGES", "SurfaceContext", "SurfaceSource", "SurfaceStage", "ToolSurface", "default_surface"]

DISCLOSURE_STAGES = ("toolsearch", "codemode")
"""Stages that decide how the final tool set is shown to the model; they stay at the end of the pipeline."""


class SurfaceSource(Protocol):
    """What the default stages need of the runtime."""

    @property
    def extra_tools(self) -> Sequence[Tool]:
        """Tools given to the runtime by its owner (tests, hosts), offered first."""
        ...

    @property
    def kernel_tools(self) -> Sequence[Tool]:
        """read, send_message and finish (empty when the runtime runs without kernel tools)."""
        ...

    @property
    def wait_tool(self) -> Tool | None:
        """The wait tool (``None`` without kernel tools)."""
        ...

    async def extension_tools(self) -> list[tuple[str, Sequence[Tool]]]:
        """Each extension's tools for this turn, in ``extends`` order, with the extension's name."""
        ...


@dataclass(frozen=True, slots=True)
class SurfaceContext:
    """What a stage may look at: the runtime, the turn, and the turn's trust level."""

    runtime: SurfaceSource
    turn: Turn
    trust: TrustLevel


SurfaceStage = Callable[[list["Tool"], SurfaceContext], Awaitable[list["Tool"]]]


class ToolSurface:
    """An ordered pipeline of named stages (see the module docstring)."""

    def __init__(self, stages: Sequence[tuple[str, SurfaceStage]] = ()):
        self._stages: list[tuple[str, SurfaceStage]] = list(stages)

    @property
    def names(self) -> tuple[str, ...]:
        """The stage names, in order."""
        return tuple(name for name, _ in self._stages)

    def add(self, name: str, stage: SurfaceStage, *, after: str | None = None, before: str | None = None) -> None:
        """Insert ``stage`` after (or before) the named one; when neither is given, at the end but before the
        disclosure stages (a disclosure stage itself goes at the very end)."""
        if name in self.names:
            raise ValueError(f"the surface already has a stage named {name!r}")
        anchor = after or before
        if anchor is None:
            disclosing = [i for i, n in enumerate(self.names) if n in DISCLOSURE_STAGES]
            at = disclosing[0] if disclosing and name not in DISCLOSURE_STAGES else len(self._stages)
            self._stages.insert(at, (name, stage))
            return
        if anchor not in self.names:
            raise ValueError(f"no surface stage named {anchor!r} (stages: {', '.join(self.names)})")
        index = self.names.index(anchor) + (1 if after else 0)
        self._stages.insert(index, (name, stage))

    def remove(self, name: str) -> None:
        """Drop the named stage."""
        self._stages = [(n, s) for n, s in self._stages if n != name]

    async def assemble(self, context: SurfaceContext, *, disclose: bool = True) -> list[Tool]:
        """Run every stage (``disclose=False``: not the disclosure stages); ``ToolConflictError`` when two tools
        share a name."""
        tools: list[Tool] = []
        origin: dict[int, str] = {}
        checked = False
        for name, stage in self._stages:
            if name in DISCLOSURE_STAGES:
                if not disclose:
                    continue
                if not checked:  # tools the disclosure stages hide must be unique as well
                    _check_unique(tools, origin, context.turn.number)
                    checked = True
            known = {id(tool) for tool in tools}
            tools = list(await stage(tools, context))
            for tool in tools:
                if id(tool) not in known:
                    origin.setdefault(id(tool), f"the {name} stage")
        _check_unique(tools, origin, context.turn.number)
        return tools


def _check_unique(tools: Sequence[Tool], origin: dict[int, str], turn: int) -> None:
    first: dict[str, Tool] = {}
    for tool in tools:
        other = first.setdefault(tool.name, tool)
        if other is not tool:
            raise ToolConflictError(
                f"turn {turn}: two tools are named {tool.name!r} "
                f"(from {origin.get(id(other), 'unknown')} and {origin.get(id(tool), 'unknown')})"
            )


async def _extra(tools: list[Tool], context: SurfaceContext) -> list[Tool]:
    return [*tools, *context.runtime.extra_tools]


async def _kernel(tools: list[Tool], context: SurfaceContext) -> list[Tool]:
    return [*tools, *context.runtime.kernel_tools]


async def _extensions(tools: list[Tool], context: SurfaceContext) -> list[Tool]:
    taken = {tool.name: "an earlier stage" for tool in tools}
    result = list(tools)
    for extension, offered in await context.runtime.extension_tools():
        for tool in offered:
            if tool.name in taken:
                raise ToolConflictError(
                    f"turn {context.turn.number}: extension {extension!r} offers a tool named {tool.name!r}, "
                    f"which {taken[tool.name]} already offers"
                )
            taken[tool.name] = f"extension {extension!r}"
            result.append(tool)
    return result


async def _wait(tools: list[Tool], context: SurfaceContext) -> list[Tool]:
    wait = context.runtime.wait_tool
    return [*tools, wait] if wait is not None else tools


def default_surface() -> ToolSurface:
    """The default pipeline: extra → kernel → extensions → wait."""
    return ToolSurface([("extra", _extra), ("kernel", _kernel), ("extensions", _extensions), ("wait", _wait)])
