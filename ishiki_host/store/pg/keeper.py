"""Keeping a host's leases: each renewed a third of the way through its period, and let go the moment it may be over.

    keeper = LeaseKeeper(book, clock=clock, on_lost=stop_runtime)
    await task_group.start(keeper.run)
    lease = await keeper.hold("runtime:ana/telegram:1/private:42")  # None: another host serves it
    async with keeper.book.fenced(keeper.lease(name)) as conn: ...   # each write under the newest grant

The keeper renews every held lease every ``seconds / 3`` on its clock, all of them in one statement (a round
costs one round trip however many leases the host holds), each round counted from the start of the last. A
renewal the database refuses (the lease expired and another host took the name) loses the lease; so does one
that cannot be made in time (the database is unreachable): a lease counts as over on this host's clock
``seconds`` after the request that last granted it was *sent*, which is never later than it ends on the
database's clock, whatever this host's clock says of the time of day. A lost lease is dropped and
``on_lost(name)`` is called once: the host stops serving the name (its runtime stops; the next input for it goes
to whoever holds it then). A database call takes at most ``seconds / 3`` of real time (``call_seconds``): a
server that stopped answering costs no more than that.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import anyio
from anyio.abc import TaskStatus

from ishiki_host.core.clock import Clock
from ishiki_host.store.pg.leases import Lease, LeaseBook

__all__ = ["LeaseKeeper"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class _Held:
    lease: Lease
    sent_at: float  # the keeper's monotonic clock when the request that granted ``lease`` went out


class LeaseKeeper:
    """The leases one host holds through ``book`` (see the module docstring)."""

    def __init__(self, book: LeaseBook, *, clock: Clock, on_lost: Callable[[str], Awaitable[None] | None]):
        self.book = book
        self.clock = clock
        self.on_lost = on_lost
        self.call_seconds = book.seconds / 3
        self._held: dict[str, _Held] = {}

    def lease(self, name: str) -> Lease | None:
        """The newest grant of ``name`` while this host holds it, else ``None``."""
        held = self._held.get(name)
        if held is None or self._over(held):
            return None
        return held.lease

    def remaining(self, name: str) -> float:
        """Seconds left of the lease on ``name`` on this host's clock (0 when it is not held): never more than is
        left on the database's (see the module docstring)."""
        held = self._held.get(name)
        return 0.0 if held is None else max(0.0, held.sent_at + self.book.seconds - self.clock.monotonic())

    @property
    def names(self) -> list[str]:
        """The names this host holds, in the order it took them."""
        return list(self._held)

    async def hold(self, name: str) -> Lease | None:
        """Take ``name`` and keep it; ``None`` when another host holds it (or the database did not answer)."""
        sent_at = self.clock.monotonic()
        _, lease = await self._call(partial(self.book.acquire, name))
        if lease is None:
            return None
        self._held[name] = _Held(lease, sent_at)
        return lease

    async def confirm(self, name: str) -> bool:
        """Renew ``name`` now under the grant this host keeps (never a new one); whether it is still this host's.
        A grant that ran out is not taken again here: its row stays for whichever host takes it over."""
        held = self._held.get(name)
        if held is None:
            return False
        sent_at = self.clock.monotonic()
        _, renewed = await self._call(partial(self.book.renew, held.lease))
        if renewed is not None and self._held.get(name) is held:
            self._held[name] = _Held(renewed, sent_at)
            return True
        return False

    def forget(self, name: str) -> None:
        """Stop keeping ``name`` without giving it up: its row runs out on the database's clock, and the host
        that takes it over then finds what its runtime left unfinished (a runtime stopped by a lost lease)."""
        self._held.pop(name, None)

    async def release(self, name: str) -> None:
        """Stop keeping ``name`` and give it up at once."""
        held = self._held.pop(name, None)
        if held is not None:
            await self._call(partial(self.book.release, held.lease))

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Renew until cancelled: a round every ``seconds / 3`` from the start of the last one, however long
        that one took (a round that waits on a slow database must not push the next one later still)."""
        task_status.started()
        period = self.book.seconds / 3
        next_round = self.clock.monotonic() + period
        while True:
            await self.clock.sleep(max(0.0, next_round - self.clock.monotonic()))
            next_round = self.clock.monotonic() + period  # from this round's start, not its end
            await self.renew_all()

    async def renew_all(self) -> None:
        """One round: renew every held lease in one statement, and let go of each that is lost."""
        held_now = dict(self._held)
        if not held_now:
            return
        sent_at = self.clock.monotonic()
        answered, renewed = await self._call(partial(self.book.renew_many, [h.lease for h in held_now.values()]))
        for name, held in held_now.items():
            if self._held.get(name) is not held:
                continue  # released, or taken again, meanwhile
            lease = renewed.get(name) if renewed is not None else None
            if lease is not None:
                self._held[name] = _Held(lease, sent_at)
            elif answered:
                await self._lose(name, "taken over or expired")
            elif self._over(held):
                await self._lose(name, "not renewed in time")

    def _over(self, held: _Held) -> bool:
        return self.clock.monotonic() >= held.sent_at + self.book.seconds

    async def _lose(self, name: str, why: str) -> None:
        self._held.pop(name, None)
        logger.warning("lease on %s lost (%s); this host stops serving it", name, why)
        outcome = self.on_lost(name)
        if outcome is not None:
            await outcome

    async def _call(self, call: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        """Whether the database answered ``call()`` within ``call_seconds``, and what (``None`` when not)."""
        try:
            with anyio.move_on_after(self.call_seconds):  # real time: the database's answer comes in real time
                return True, await call()
        except Exception as exc:  # the connection broke, the server restarts: no answer
            logger.info("lease call failed: %s", exc)
        return False, None
