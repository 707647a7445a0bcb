"""toolsearch in the runtime: resident and deferred tools, the ``search`` tool, and the persisted catalogue.

With toolsearch on, the model's list holds the resident tools (``RESIDENT``: ``finish``, ``wait``,
``send_message``, ``read``, ``search``, plus the profile's ``toolsearch.resident``) and the tools a search has
found. Every other tool is deferred. ``search(query)`` ranks the deferred tools not found yet (and allowed at
the turn's trust) with ``ToolIndex``; the best ``maxResults`` are discovered and become callable from the
next step.

``ToolCatalog`` keeps what was discovered and the catalogue (the names of every deferrable tool), and writes
both to the fact log as ``catalog`` entries, so a restarted runtime offers the tools it offered before. Each
entry carries the whole state (``discovered``, ``catalogue``), so loading reads back only to the newest one:

- a search that found tools: ``{"added": [...], "query": "...", "discovered": [...], "catalogue": [...]}``;
- the catalogue changed (tools appeared or went away): ``{"listed": [...], "unlisted": [...], ...}``;
- a ``snapshot`` (``{"snapshot": true, ...}``) when the newest entry is far back, to keep that read short.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ishiki_host.core.tools import Tool, ToolResult, TrustLevel, trust_allows
from ishiki_host.plugins.toolnames import SEARCH_TOOL
from ishiki_host.tools.search_index import ToolIndex

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.tools import ToolContext

__all__ = [
    "RESIDENT",
    "SEARCH_PARAMETERS",
    "SEARCH_TOOL",
    "SNAPSHOT_DISTANCE",
    "Finder",
    "ToolCatalog",
    "make_search_tool",
    "split_for_toolsearch",
]

RESIDENT = frozenset({"finish", "wait", "send_message", "read", SEARCH_TOOL})
SNAPSHOT_DISTANCE = 2_000
"""A new snapshot entry is written when the newest ``catalog`` entry is more entries back than this."""

SEARCH_DESCRIPTION = (
    "Find more tools. Only some of your tools are listed; describe what you need in a few words "
    "(e.g. 'weather forecast', 'send email'). The best matching tools become callable from your next step."
)
SEARCH_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1000,
            "description": "What you need a tool for, in a few words.",
        }
    },
    "required": ["query"],
    "additionalProperties": False,
}


def split_for_toolsearch(
    tools: Sequence[Tool], resident: Collection[str], discovered: Collection[str]
) -> tuple[list[Tool], list[Tool]]:
    """``(offered, deferrable)``: resident and discovered tools are offered; every non-resident tool is
    deferrable (the catalogue), discovered or not."""
    offered = [tool for tool in tools if tool.name in resident or tool.name in discovered]
    deferrable = [tool for tool in tools if tool.name not in resident]
    return offered, deferrable


class ToolCatalog:
    """What the model discovered and what it could discover, persisted in the fact log (module docstring)."""

    def __init__(self) -> None:
        self.discovered: set[str] = set()
        self.catalogue: frozenset[str] = frozenset()
        self.version = 0  # grows with every discovery: the tools shown in a step are redone when it changed
        self._loaded = False
        self._newest: int | None = None  # id of the newest catalog entry
        self._pending: list[dict[str, Any]] = []

    async def load(self, log: FactLogProtocol) -> None:
        """Restore the state from the newest ``catalog`` entry (once; later calls do nothing)."""
        if self._loaded:
            return
        newest = await log.read_back(_newest_catalog)
        self._loaded = True
        if newest is None:
            return
        self._newest = newest.id
        self.discovered = set(_names(newest.data.get("discovered")))
        self.catalogue = frozenset(_names(newest.data.get("catalogue")))

    async def note_catalogue(self, names: Iterable[str], log: FactLogProtocol, turn: int | None) -> None:
        """Record the deferrable tools of a turn: an entry when they changed, or a snapshot when the newest
        entry is far back."""
        current = frozenset(names)
        if current != self.catalogue:
            listed, unlisted = sorted(current - self.catalogue), sorted(self.catalogue - current)
            self.catalogue = current
            await self._append(log, {"listed": listed, "unlisted": unlisted}, turn)
        elif self._newest is None or log.last_id - self._newest > SNAPSHOT_DISTANCE:
            await self._append(log, {"snapshot": True}, turn)

    def discover(self, names: Sequence[str], query: str) -> None:
        """Make ``names`` callable from the next step; the entry is written by ``flush``."""
        fresh = [name for name in names if name not in self.discovered]
        if not fresh:
            return
        self.discovered.update(fresh)
        self.version += 1
        self._pending.append({"added": fresh, "query": query, **self._state()})

    @property
    def pending(self) -> bool:
        """Whether discoveries wait to be written."""
        return bool(self._pending)

    async def flush(self, log: FactLogProtocol, turn: int | None) -> None:
        """Write the discoveries not written yet (after the step's batch: a step's entries stay together)."""
        pending, self._pending = self._pending, []
        for data in pending:
            self._newest = (await log.append("catalog", data, turn=turn)).id

    async def _append(self, log: FactLogProtocol, data: dict[str, Any], turn: int | None) -> None:
        self._newest = (await log.append("catalog", {**data, **self._state()}, turn=turn)).id

    def _state(self) -> dict[str, list[str]]:
        return {"discovered": sorted(self.discovered), "catalogue": sorted(self.catalogue)}


def _newest_catalog(newest_first: Iterator[Entry]) -> Entry | None:
    return next((entry for entry in newest_first if entry.type == "catalog" and "discovered" in entry.data), None)


def _names(value: Any) -> list[str]:
    return [name for name in value if isinstance(name, str)] if isinstance(value, list) else []


class Finder:
    """Ranks one turn's deferred tools for ``search`` and records what it finds (``ToolIndex`` kept while the
    catalogue does not change)."""

    def __init__(self, catalog: ToolCatalog, max_results: int, *, in_programs: bool):
        self._catalog = catalog
        self._max = max_results
        self._in_programs = in_programs
        self._key: tuple[tuple[str, str], ...] = ()
        self._index = ToolIndex(())
        self._tools: dict[str, Tool] = {}

    def offer(self, deferrable: Sequence[Tool]) -> None:
        """The deferrable tools of the running turn (the index is rebuilt only when they changed)."""
        key = tuple((tool.name, tool.description) for tool in deferrable)
        self._tools = {tool.name: tool for tool in deferrable}
        if key != self._key:
            self._key, self._index = key, ToolIndex(deferrable)

    def search(self, query: str, trust: TrustLevel) -> dict[str, Any]:
        """Discover the best undiscovered tools for ``query`` that ``trust`` allows; the model's answer."""
        above = {name for name, tool in self._tools.items() if not trust_allows(trust, tool.trust)}
        hidden = self._catalog.discovered | above
        hits = self._index.search(query, exclude=hidden, max_results=self._max)
        found = [self._tools[hit.name] for hit in hits]
        self._catalog.discover([tool.name for tool in found], query)
        left = sum(1 for name in self._tools if name not in self._catalog.discovered and name not in above)
        return {
            "found": [{"name": tool.name, "description": tool.description} for tool in found],
            "note": self._note(bool(found), left),
        }

    def _note(self, found: bool, left: int) -> str:
        if found:
            where = " as tools.<name>(...) inside codemode programs" if self._in_programs else ""
            return f"These tools are callable from your next step{where}. {left} more can be found."
        if left == 0:
            return "No more tools to find: every tool you may use is already listed."
        return f"No tool matched. Try other words; {left} tools can still be found."


def make_search_tool(finder: Finder, trust_now: Callable[[], TrustLevel]) -> Tool:
    """``search(query)`` over ``finder`` (trust ``untrusted``); ``trust_now()`` is the turn's trust level."""

    async def handler(args: Mapping[str, Any], context: ToolContext) -> ToolResult:
        data = finder.search(str(args["query"]), trust_now())
        return ToolResult(json.dumps(data, ensure_ascii=False), data=data)

    return Tool(SEARCH_TOOL, SEARCH_DESCRIPTION, handler, SEARCH_PARAMETERS, trust="untrusted")
