"""What a runtime asks of its fact log, whichever store holds it: the file (``FactLog``) or a database.

``FactLogProtocol`` names the part of ``FactLog`` that the runtime, its engines and its plugins use; a log kept
elsewhere (``ishiki_host.store.pg.facts.PgFactLog``: rows of PostgreSQL under the runtime's lease) satisfies it
fully, and ``tests/store/test_factlog_contract.py`` runs one suite against both. What it promises:

- ids count up from 1 by one, per log, across reopens; ``append_many`` writes its entries together;
- durability per the fsync policy (``always``, ``turn``, ``never``, as ``FactLog`` documents them): an append
  outside a turn is durable when it returns, one inside a turn (or with ``sync=False``) once ``sync`` covers it;
  ``durable_id`` says how far it is; a log opened again holds what was durable (and counts it durable);
- ``read_back(select)`` runs a pure ``select`` over the whole log, newest first, from a bounded cache of the
  newest entries (``cached`` of them), reading further only as far as ``select`` consumes;
- ``shrink_cache`` gives cached entries back, calls the ``on_shrink`` callbacks and counts ``generation`` up,
  so a reader keeping its own copy of entries reads again;
- ``wait_appended(after_id)`` wakes a follower once a newer entry is written, or once the log is closed;
- ``park`` gives back what an idle log holds besides its cache (the file log: its file and lock), and the log
  works on as before at its next call;
- ``close`` makes what was appended durable (unless ``never``) and is idempotent; after it, appends and reads
  raise ``FactLogError``.

``FactLog``'s synchronous readers (``tail``, ``iter_reverse``, ``iter_forward``) read the file from the calling
thread, which a log behind a network cannot do: they are not part of the contract (``read_back`` does the same).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.jsontypes import Json

__all__ = ["FactLogProtocol"]

T = TypeVar("T")


class FactLogProtocol(Protocol):
    """An open fact log (see the module docstring); ``FactLog`` is the embedded one."""

    @property
    def last_id(self) -> int:
        """The id of the newest entry (0 for an empty log)."""
        ...

    @property
    def durable_id(self) -> int:
        """The id of the newest entry known to be durable."""
        ...

    @property
    def generation(self) -> int:
        """Counts up whenever entries a reader may have copied are to be read again (``shrink_cache``, a file
        changed by another hand)."""
        ...

    @property
    def cached(self) -> int:
        """How many of the newest entries are held in memory."""
        ...

    @property
    def where(self) -> str:
        """Where the log lives, for messages (the file log: its path)."""
        ...

    @property
    def closed(self) -> bool:
        """Whether ``close()`` ran."""
        ...

    async def append(self, type: str, data: Mapping[str, Json], *, turn: int | None = None, sync: bool = True) -> Entry:
        """Append one entry; returns it as stored."""
        ...

    async def append_many(
        self, items: Iterable[tuple[str, Mapping[str, Json]]], *, turn: int | None = None, sync: bool = True
    ) -> list[Entry]:
        """Append ``(type, data)`` pairs as consecutive entries, together; ``sync=False`` leaves them to ``sync``."""
        ...

    async def sync(self, *, upto: int | None = None) -> None:
        """Make what was appended durable (with ``upto``: at least the entries up to that id)."""
        ...

    async def read_back(self, select: Callable[[Iterator[Entry]], T]) -> T:
        """Run the pure ``select`` over the entries newest first; it may be run twice (see ``FactLog``)."""
        ...

    async def wait_appended(self, after_id: int) -> None:
        """Return once an entry newer than ``after_id`` is written, or once the log is closed."""
        ...

    def shrink_cache(self, keep: int = 0) -> int:
        """Forget all but the newest ``keep`` cached entries; returns how many were dropped."""
        ...

    def on_shrink(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` each time ``shrink_cache`` runs."""
        ...

    async def park(self) -> bool:
        """Give back what an idle log holds besides its cache (``FactLog``: its file and lock, opened again by the
        next append or read); whether it did. A log that holds nothing of the kind returns ``False``."""
        ...

    async def close(self) -> None:
        """Make the appended entries durable (unless ``never``) and close; idempotent."""
        ...
