"""How a turn's tools are shown to the model when the profile turns codemode and/or toolsearch on.

A runtime whose profile turns either on makes one (``ToolDisclosure(runtime)``) and installs its surface
stages, its agent hook and its part of the system prompt:

- **Per turn**, the stages (``toolsearch``, then ``codemode``; last in ``runtime.surface``) receive every tool
  the turn may use, after every other stage (plugin switches included), and return what the model sees:
  toolsearch keeps the resident and discovered tools and adds ``search`` (``ishiki_host.runtime.toolsearch``);
  codemode keeps the direct tools and adds ``codemode`` for the others the turn's trust allows
  (``ishiki_host.runtime.codemode``). With both on, a discovered tool becomes callable inside programs
  without entering the model's list (unless ``codemode.direct`` names it).
- **Per step** (the hook's ``prepare_step``, after the runtime's trust filter): when a search discovered
  tools or the turn's trust dropped since the list was made, the list is made again from the turn's tools,
  so discoveries are callable from the next step and a lower trust shrinks the programs' tools too. Every
  step of the runner starts again from the turn's first list, so a list made again is kept and given to each
  later step of the turn: a discovery stays callable for the rest of the turn, not only the step after it.
- **Persistence**: discoveries are written as ``catalog`` entries after the step's batch (``turn.step``),
  or at the turn's end; the catalogue is written when a turn's deferrable tools differ from the last one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Protocol

from ishiki_host.core.hooks import AgentHooks
from ishiki_host.core.tools import Tool, TrustLevel, trust_allows
from ishiki_host.errors import ToolConflictError
from ishiki_host.runtime.codemode import (
    CODEMODE_TOOL,
    DIRECT_ONLY,
    ProgramRuntime,
    limits_of,
    make_codemode_tool,
    split_for_codemode,
)
from ishiki_host.runtime.toolsearch import (
    RESIDENT,
    SEARCH_TOOL,
    Finder,
    ToolCatalog,
    make_search_tool,
    split_for_toolsearch,
)

if TYPE_CHECKING:
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.bus import BusEvent, EventBus
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.turns import Step
    from ishiki_host.runtime.surface import SurfaceContext, ToolSurface

__all__ = ["DisclosureRuntime", "ToolDisclosure"]

_FLUSH_ON = ("turn.step", "turn.done", "turn.failed", "turn.aborted")


class DisclosureRuntime(ProgramRuntime, Protocol):
    """What disclosure needs of its runtime (``AgentRuntime`` is one): a program's needs, and these."""

    @property
    def profile(self) -> Profile:
        """The profile (its ``codemode`` and ``toolsearch`` sections)."""
        ...

    @property
    def log(self) -> FactLogProtocol:
        """Where ``catalog`` entries go."""
        ...


class ToolDisclosure:
    """Codemode and toolsearch for one runtime (see the module docstring)."""

    def __init__(self, host: DisclosureRuntime):
        profile = host.profile
        self._host = host
        self._codemode = profile.codemode
        self._toolsearch = profile.toolsearch
        self.catalog = ToolCatalog()
        self._finder: Finder | None = None
        self._search: Tool | None = None
        self._resident: frozenset[str] = frozenset()
        self._direct_only = DIRECT_ONLY | ({SEARCH_TOOL} if self._toolsearch is not None else set())
        if self._toolsearch is not None:
            self._resident = RESIDENT | frozenset(self._toolsearch.resident)
            self._finder = Finder(self.catalog, self._toolsearch.max_results, in_programs=self._codemode is not None)
            self._search = make_search_tool(self._finder, self.trust)
        self._turn_tools: list[Tool] = []
        self._shown: tuple[int, TrustLevel] | None = None
        self._redone: list[Tool] | None = None  # the list made again within the running turn, if any
        self._program_cache: tuple[tuple[Tool, ...], Tool] | None = None

    def install(self, surface: ToolSurface, bus: EventBus) -> None:
        """Add the stages to ``surface`` and write discoveries when steps and turns end on ``bus``."""
        if self._toolsearch is not None:
            surface.add("toolsearch", self._toolsearch_stage)
            for name in _FLUSH_ON:
                bus.subscribe(name, self._flush)
        if self._codemode is not None:
            surface.add("codemode", self._codemode_stage)

    def hooks(self) -> AgentHooks:
        """The agent hook that redoes the model's list within a turn (compose it after the runtime's hooks)."""
        return _DisclosureHooks(self)

    def instructions(self) -> str:
        """The system prompt's note on how tools are reached."""
        lines = ["## Your tools"]
        if self._toolsearch is not None:
            where = " inside codemode programs" if self._codemode is not None else ""
            lines.append(
                "Only some of your tools are listed. When you need something no listed tool does, call search "
                f"with a few words describing it: the tools it finds become callable{where} from your next step."
            )
        if self._codemode is not None:
            lines.append(
                "Most tools are called from short JavaScript programs through the codemode tool; its description "
                "lists them as typed signatures. Combine several calls in one program (independent ones with "
                "Promise.all) and return only what you need. Call finish and wait directly; send_message works both "
                "ways."
            )
        return "\n".join(lines)

    # -- the surface stages -----------------------------------------------------------------------------

    async def _toolsearch_stage(self, tools: list[Tool], context: SurfaceContext) -> list[Tool]:
        assert self._finder is not None
        assert self._search is not None
        _refuse_taken(tools, SEARCH_TOOL, "toolsearch", context.turn.number)
        self._begin(tools, context.trust)
        log = self._host.log
        await self.catalog.load(log)
        offered, deferrable = split_for_toolsearch(tools, self._resident, self.catalog.discovered)
        await self.catalog.note_catalogue([tool.name for tool in deferrable], log, context.turn.number)
        self._finder.offer(deferrable)
        return [*offered, self._search]

    async def _codemode_stage(self, tools: list[Tool], context: SurfaceContext) -> list[Tool]:
        _refuse_taken(tools, CODEMODE_TOOL, "codemode", context.turn.number)
        if self._toolsearch is None:
            self._begin(tools, context.trust)
        return self._fold(tools, context.trust)

    def _begin(self, tools: Sequence[Tool], trust: TrustLevel) -> None:
        self._turn_tools = list(tools)
        self._shown = (self.catalog.version, trust)
        self._redone = None

    def _fold(self, tools: Sequence[Tool], trust: TrustLevel) -> list[Tool]:
        assert self._codemode is not None
        split = split_for_codemode(tools, self._codemode.direct, self._direct_only)
        program = tuple(tool for tool in split.program if trust_allows(trust, tool.trust))
        if not program:
            return list(split.direct)
        return [*split.direct, self._codemode_tool(program)]

    def _codemode_tool(self, program: tuple[Tool, ...]) -> Tool:
        """The codemode tool for ``program``, the same object while the program's tools are the same ones."""
        assert self._codemode is not None
        cached = self._program_cache
        if cached is not None and len(cached[0]) == len(program) and all(map(_same, cached[0], program)):
            return cached[1]
        tool = make_codemode_tool(program, limits_of(self._codemode), self._host)
        self._program_cache = (program, tool)
        return tool

    # -- within a turn ----------------------------------------------------------------------------------

    def trust(self) -> TrustLevel:
        """The running turn's trust level now."""
        return self._host.turn_state.trust

    def stale(self, trust: TrustLevel) -> bool:
        """Whether a discovery or a lower trust changed what the model should see since the list was made."""
        return self._shown is not None and self._shown != (self.catalog.version, trust)

    def step_tools(self, trust: TrustLevel) -> list[Tool] | None:
        """The model's list for a later step of the turn at ``trust``: made again when stale, else the one made
        last in this turn; ``None`` while the turn's first list still holds."""
        if self.stale(trust):
            self._redone = self.redisclose(trust)
        return self._redone

    def redisclose(self, trust: TrustLevel) -> list[Tool]:
        """The model's list made again from the turn's tools, at ``trust``."""
        tools: list[Tool] = list(self._turn_tools)
        if self._toolsearch is not None:
            assert self._search is not None
            offered, _ = split_for_toolsearch(tools, self._resident, self.catalog.discovered)
            tools = [*offered, self._search]
        if self._codemode is not None:
            tools = self._fold(tools, trust)
        self._shown = (self.catalog.version, trust)
        return [tool for tool in tools if trust_allows(trust, tool.trust)]

    def _flush(self, event: BusEvent) -> Awaitable[None] | None:
        """Write pending discoveries; a plain call when there are none (most steps), so it costs the bus little."""
        if not self.catalog.pending:
            return None
        turn = event["step"].turn.number if event.name == "turn.step" else event["outcome"].turn
        return self.catalog.flush(self._host.log, turn)


class _DisclosureHooks(AgentHooks):
    """Gives each later step the list as the turn's discoveries and trust make it (``ToolDisclosure.step_tools``)."""

    def __init__(self, disclosure: ToolDisclosure):
        self._disclosure = disclosure

    async def prepare_step(self, step: Step) -> None:
        """From the second step on, the list made again when a discovery or a lower trust changed it."""
        if step.index == 1:
            return
        tools = self._disclosure.step_tools(self._disclosure.trust())
        if tools is not None:
            step.tools[:] = tools


def _same(a: Tool, b: Tool) -> bool:
    return a is b


def _refuse_taken(tools: Sequence[Tool], name: str, stage: str, turn: int) -> None:
    if any(tool.name == name for tool in tools):
        raise ToolConflictError(f"turn {turn}: a tool named {name!r} is offered, but {stage} needs that name")
