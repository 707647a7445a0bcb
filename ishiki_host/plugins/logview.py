"""``FactLogView``: the ``RuntimeLogView`` of a fact log in this process, and the ``read_back`` selectors it
reads with.

It reads the runtime's own ``FactLog``: windows from its cache (off the event loop past it, as ``read_back``
does), waits on the log's own "appended" event. The host gives it to host plugins for the runtimes it runs
itself (``HostPluginContext.runtime_log``); a plugin's tests wrap a ``FactLog`` of their own in one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.plugins.hostplugin import RuntimeLogView

__all__ = ["FactLogView", "entries_after", "entries_before"]


class FactLogView:
    """A ``RuntimeLogView`` over a ``FactLog`` of this process: ``key`` is the runtime's address, ``log`` its
    open log (the view is closed once the log is)."""

    def __init__(self, key: RuntimeKey, log: FactLogProtocol):
        self._key = key
        self._log = log

    @property
    def key(self) -> RuntimeKey:
        """The runtime's address."""
        return self._key

    @property
    def closed(self) -> bool:
        """Whether the log was closed (its runtime stopped)."""
        return self._log.closed

    async def window(self, *, before: int | None = None, limit: int) -> list[Entry]:
        """The newest ``limit`` entries below ``before`` (all when ``None``), oldest first."""
        return await self._log.read_back(entries_before(before, limit))

    async def since(self, after: int, *, limit: int) -> list[Entry]:
        """The entries newer than ``after`` (the newest ``limit`` of them), oldest first."""
        return await self._log.read_back(entries_after(after, limit))

    async def wait_appended(self, after: int) -> None:
        """Until the log holds an entry newer than ``after``, or is closed."""
        await self._log.wait_appended(after)


def entries_before(before: int | None, limit: int) -> Callable[[Iterator[Entry]], list[Entry]]:
    """A ``read_back`` selector: the last ``limit`` entries below ``before`` (all when ``None``), oldest first."""

    def select(newest_first: Iterator[Entry]) -> list[Entry]:
        taken: list[Entry] = []
        for entry in newest_first:
            if before is not None and entry.id >= before:
                continue
            taken.append(entry)
            if len(taken) >= limit:
                break
        taken.reverse()
        return taken

    return select


def entries_after(after: int, limit: int) -> Callable[[Iterator[Entry]], list[Entry]]:
    """A ``read_back`` selector: the entries above ``after`` (the newest ``limit`` of them), oldest first."""

    def select(newest_first: Iterator[Entry]) -> list[Entry]:
        taken: list[Entry] = []
        for entry in newest_first:
            if entry.id <= after or len(taken) >= limit:
                break
            taken.append(entry)
        taken.reverse()
        return taken

    return select


if TYPE_CHECKING:
    _CONTRACT: type[RuntimeLogView] = FactLogView  # mypy holds the view to its protocol
