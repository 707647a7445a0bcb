"""Where a runtime's fact log is opened: the seam between a runtime and the store that holds its log.

A runtime asks its host's ``RuntimeLogs`` for its log when it starts (``SharedParts.logs``). ``FileLogs``, the
default, opens ``<home>/facts.jsonl`` (``FactLog``); a host on a PostgreSQL store opens the runtime's rows
under its lease instead (``ishiki_host.host.fleet``). Whatever the store, the runtime sees a
``FactLogProtocol`` and nothing else of it, so the engines and plugins that read a log work on either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ishiki_host.core.factlog import FactLog

if TYPE_CHECKING:
    from pathlib import Path

    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.factlog import FsyncPolicy, Syncer
    from ishiki_host.core.factlog_contract import FactLogProtocol

__all__ = ["FileLogs", "RuntimeLogs"]


class RuntimeLogs(Protocol):
    """Opens the fact log of a runtime (see the module docstring)."""

    async def open(
        self, key: RuntimeKey, home: Path, *, fsync: FsyncPolicy, clock: Clock, syncer: Syncer | None
    ) -> FactLogProtocol:
        """The open log of the runtime at ``key``, whose home directory is ``home``; what an open raises
        (``FactLogError``: locked, unreadable, its lease held elsewhere) stops the runtime's start."""
        ...


class FileLogs:
    """Each runtime's log in the file ``<home>/facts.jsonl``: the embedded store of one machine."""

    async def open(
        self, key: RuntimeKey, home: Path, *, fsync: FsyncPolicy, clock: Clock, syncer: Syncer | None
    ) -> FactLogProtocol:
        """``FactLog.open`` on the home's ``facts.jsonl``."""
        return await FactLog.open(home / "facts.jsonl", fsync=fsync, clock=clock, syncer=syncer)
