"""One host of a fleet: several hosts on one PostgreSQL ``store``, each runtime served by one of them at a time.

``ishiki.yaml``'s ``store: postgresql://...`` makes the host open a ``Fleet`` at its start (``StoreUnreachable``:
it does not start) and bring the database to the fleet's schema. From then on:

- **Ownership.** The host serves a runtime while it holds the runtime's lease (``runtime:<key>``, kept by a
  ``LeaseKeeper``: renewed every third of ``fleet.lease_seconds``, on the database's clock). Its fact log is
  the runtime's rows in PostgreSQL, every append fenced by that lease (``FleetLogs``: ``PgFactLog``), so a
  host that lost it writes nothing. A lost lease stops the runtime here at once; a log closed (the runtime
  idle, the profile reloaded, the host stopping) gives the lease up, so another host can take the key.
- **Ingest anywhere, decide at the owner.** An event a channel of this host hands in (a webhook behind a load
  balancer may land on any host) goes to its runtime here when this host holds the lease or takes it now
  (``FleetPlacement``). When another host serves the runtime, the event is put in the fleet's inbox
  (durable when ``dispatch`` returns, so the channel may acknowledge it) and its owner is notified; each host
  drains what waits for the keys it serves or may take (``Inbox.wakeups``: NOTIFY, with the poll as the
  fallback). The runtime recognises an event it recorded before, so an event taken twice (its first taker
  died before saying it was done) is answered once.
- **Takeover.** A lease that expired without being given up is a host that died (or froze) while serving the
  runtime: every poll, each host takes such leases and respawns their runtimes from the fact log, which
  decides what the crash left owed (an interrupted turn is resumed, as after a restart on one machine).

What stays per host: the data directory (its lock, attachments and artifacts, the memory database, the
usage counts, the control socket). The memory database on PostgreSQL is the next step (docs/scale-out.md).
"""

from __future__ import annotations

import json
import logging
import secrets
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.channels.codec import FrameError, attachment_from, attachment_json, event_from
from ishiki_host.errors import AgentStopped, FactLogError, RuntimeStartFailed
from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.jsontypes import Json
from ishiki_host.store.pg.facts import PgFactLog
from ishiki_host.store.pg.fleetview import fleet_status
from ishiki_host.store.pg.hosts import HostBook
from ishiki_host.store.pg.inbox import Inbox
from ishiki_host.store.pg.keeper import LeaseKeeper
from ishiki_host.store.pg.leases import RUNTIME_LEASE, Lease, LeaseBook, LeaseLost, runtime_lease_name
from ishiki_host.store.pg.pool import open_pool, safe_url
from ishiki_host.store.pg.schema import migrate
from ishiki_host.store.pg.slots import BeatSlots

if TYPE_CHECKING:
    from pathlib import Path

    from psycopg_pool import AsyncConnectionPool

    from ishiki_host.channels.base import Delivery, InboundAttachment
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.config.host import FleetSettings
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.factlog import FsyncPolicy, Syncer
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.host.routes import ProfileRoute, RouteTable

__all__ = [
    "Fleet",
    "FleetLogs",
    "FleetPlacement",
    "Forwarded",
    "decode_inbox_body",
    "encode_inbox_body",
    "fleet_holder",
]

logger = logging.getLogger(__name__)

ACCOUNT_LEASE = "account:"
"""The prefix of an exclusive channel account's lease name: ``account:<platform#index>``."""


def fleet_holder(name: str | None) -> str:
    """The holder name of this run of a host: ``name`` (or the machine's host name) and a suffix of its own,
    so two hosts given one name, or a host restarted while its old leases last, never share a lease."""
    return f"{name or socket.gethostname()}/{secrets.token_hex(4)}"


class Forwarded:
    """The event is durable in the fleet's inbox, for the host that serves its runtime (``seq``)."""

    def __init__(self, key: RuntimeKey, seq: int):
        self.key = key
        self.seq = seq

    @property
    def routed(self) -> bool:
        """Always true."""
        return True

    @property
    def runtime_key(self) -> str | None:
        """The key of the runtime the event is for."""
        return str(self.key)

    @property
    def entry_id(self) -> int | None:
        """None: the owner records it in the runtime's log."""
        return None

    async def settled(self) -> None:
        """Returns at once: the event's turn runs on another host."""

    def __repr__(self) -> str:
        return f"<Forwarded {self.key} inbox={self.seq}>"


class Fleet:
    """This host's part of the fleet (see the module docstring): made by ``open``, bound to the host's routes
    by ``run``, closed by ``aclose``."""

    def __init__(self, pool: AsyncConnectionPool[Any], url: str, settings: FleetSettings, clock: Clock):
        self.pool = pool
        self.url = url
        self.settings = settings
        self.holder = fleet_holder(settings.name)
        self.hosts = HostBook(pool, self.holder, self.holder.split("/", 1)[0])
        self.slots = BeatSlots(pool, self.holder)
        self.book = LeaseBook(pool, self.holder, seconds=settings.lease_seconds)
        self.keeper = LeaseKeeper(self.book, clock=clock, on_lost=self._lost)
        self.inbox = Inbox(pool, poll_seconds=settings.poll_seconds)
        self.logs = FleetLogs(self)
        self.placement = FleetPlacement(self)
        self.clock = clock
        self.routes: RouteTable | None = None
        # Whether this host can answer in a runtime's channel: a chat of an exclusive account (a linked device)
        # is served where the account's connection runs, never on a host standing by for it (set by the host).
        self.can_serve: Callable[[RuntimeKey], bool] = lambda key: True
        self.view: dict[str, Json] | None = None  # the whole fleet as last read (``fleetview``), for the status
        self._account_lost: dict[str, Callable[[], None]] = {}
        self._draining: set[str] = set()
        self._again: set[str] = set()

    @classmethod
    async def open(cls, url: str, settings: FleetSettings, clock: Clock) -> Fleet:
        """Connect to the store at ``url`` and bring it to the fleet's schema (``StoreUnreachable``: it did not
        answer; ``StoreError``: its schema is newer than this host's)."""
        pool = await open_pool(url)
        try:
            await migrate(pool)
        except BaseException:
            await pool.close()
            raise
        fleet = cls(pool, url, settings, clock)
        await fleet.hosts.register()  # ``ishiki status`` sees it from now on
        logger.info("fleet store %s: this host is %s", safe_url(url), fleet.holder)
        return fleet

    async def run(self, routes: RouteTable, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keep the leases and drain the inbox for ``routes`` until cancelled."""
        self.routes = routes
        async with anyio.create_task_group() as tg:
            await tg.start(self.keeper.run)
            await tg.start(self.hosts.run, self.clock, self.settings.lease_seconds / 3)
            tg.start_soon(self._watch_inbox, tg)
            tg.start_soon(self._take_over)
            tg.start_soon(self._observe)
            task_status.started()

    async def aclose(self) -> None:
        """Give every lease still held up (the runtimes closed theirs already), say the host stopped, close the
        pool."""
        with anyio.CancelScope(shield=True):
            for name in self.keeper.names:
                await self.keeper.release(name)
            try:
                await self.hosts.stopped()
            except Exception as exc:  # the database is away: the host's row ages out as a dead one's does
                logger.info("could not mark this host stopped in the fleet: %s", exc)
            await self.pool.close()

    def status(self) -> dict[str, Json]:
        """This host's part of the fleet for ``Host.status``: who it is, on which store, what it holds, and the
        fleet as last read (``fleet``: hosts, leases, the inbox; ``None`` before the first read)."""
        names = self.keeper.names
        return {
            "holder": self.holder,
            "store": safe_url(self.url),
            "runtimeLeases": sum(1 for name in names if name.startswith(RUNTIME_LEASE)),
            "accountLeases": sorted(
                name.removeprefix(ACCOUNT_LEASE) for name in names if name.startswith(ACCOUNT_LEASE)
            ),
            "leaseSeconds": self.settings.lease_seconds,
            "fleet": self.view,
        }

    async def _observe(self) -> None:
        """Every ``poll_seconds``: read the whole fleet (hosts, leases, the inbox's lag) for ``status``, which
        must answer without a database call (the dashboard and ``/readyz`` ask it often)."""
        while True:
            try:
                self.view = await fleet_status(self.pool, alive_seconds=self.settings.lease_seconds)
            except Exception as exc:  # the database is away: the last view stays, with its age
                logger.debug("reading the fleet failed: %s", exc)
            await self.clock.sleep(self.settings.poll_seconds)

    # -- ownership --------------------------------------------------------------------------------------

    def held(self, key: RuntimeKey) -> Lease | None:
        """This host's lease on the runtime at ``key``, while it holds one."""
        return self.keeper.lease(runtime_lease_name(str(key)))

    async def fence(self, key: RuntimeKey) -> None:
        """Return when the runtime at ``key`` may send from this host; ``LeaseLost`` when it may not.

        With at least a quarter of its lease left on this host's clock (renewals keep two thirds of it), at
        once. With less (a host that froze past its lease and woke, a renewal that is late), the lease is
        confirmed with the database first: still this host's under the same token, it is renewed and the send
        goes out; run out or taken, nothing is sent (and no new grant is taken here), the runtime's next entry
        is refused too, and whoever takes the lease over next decides again."""
        name = runtime_lease_name(str(key))
        if self.keeper.remaining(name) >= self.settings.lease_seconds / 4:
            return
        if not await self.keeper.confirm(name):
            raise LeaseLost(f"the lease on {name!r} is no longer {self.holder}'s: the reply of {key} is not sent")

    async def take(self, key: RuntimeKey) -> Lease | None:
        """This host's lease on ``key``: the one it holds, or a new one; ``None`` while another host holds it,
        or while this host cannot speak in the runtime's channel (``can_serve``)."""
        held = self.held(key)
        if held is not None:
            return held
        if not self.can_serve(key):
            return None
        return await self.keeper.hold(runtime_lease_name(str(key)))

    async def hold_account(self, label: str, lost: Callable[[], None]) -> None:
        """Return once this host holds the lease of the exclusive account ``label`` (``AccountLeases``), trying
        again every ``poll_seconds`` while another host runs it; ``lost()`` is called when it is lost."""
        name = ACCOUNT_LEASE + label
        while await self.keeper.hold(name) is None:
            await self.clock.sleep(self.settings.poll_seconds)
        self._account_lost[name] = lost
        logger.info("channel %s runs on this host (it holds the account's lease)", label)

    async def release_account(self, label: str) -> None:
        """Give the account's lease up: its connection stopped here."""
        name = ACCOUNT_LEASE + label
        self._account_lost.pop(name, None)
        await self.keeper.release(name)

    async def claim_slot(self, beat_id: str, due_at: float) -> bool:
        """Whether this host runs the heartbeat slot (``SlotClaims``; ``store.pg.slots``)."""
        return await self.slots.claim(beat_id, due_at)

    async def _lost(self, name: str) -> None:
        if name.startswith(ACCOUNT_LEASE):
            lost = self._account_lost.pop(name, None)
            if lost is not None:
                logger.warning(
                    "channel %s stops here: another host of the fleet runs it now", name[len(ACCOUNT_LEASE) :]
                )
                lost()
            return
        key = RuntimeKey.parse(name.removeprefix(RUNTIME_LEASE))
        route = self.routes.get(key.profile) if self.routes is not None and key is not None else None
        if key is not None and route is not None and route.stop_runtime(key, "lease lost"):
            logger.warning("runtime %s stopped here: its lease is no longer this host's", key)

    # -- takeover ---------------------------------------------------------------------------------------

    async def _take_over(self) -> None:
        """Every ``poll_seconds``: respawn here the runtimes whose host died holding them (see the module
        docstring); a database away for a while skips a round."""
        while True:
            await self.clock.sleep(self.settings.poll_seconds)
            try:
                names = await self.book.expired(RUNTIME_LEASE)
            except Exception as exc:
                logger.info("looking for runtimes left by a host that died failed: %s", exc)
                continue
            for name in names:
                key = RuntimeKey.parse(name.removeprefix(RUNTIME_LEASE))
                route = self.routes.get(key.profile) if self.routes is not None and key is not None else None
                if key is None or route is None or name in self.keeper.names or self._serving(key):
                    continue  # not a profile of this host's, or this host's own (its keeper decides on it)
                if await self.take(key) is None:
                    continue  # another host was quicker
                logger.warning("runtime %s taken over: the host that served it stopped renewing its lease", key)
                try:
                    await route.runtime(key)  # its fact log says what the crash left owed
                except Exception:
                    logger.exception("runtime %s could not be respawned here", key)
                    await self.let_go(key)

    # -- the inbox --------------------------------------------------------------------------------------

    async def _watch_inbox(self, tg: TaskGroup) -> None:
        async for keys in self.inbox.wakeups(self.holder):
            for text in keys:
                if text in self._draining:
                    self._again.add(text)  # its drain looks once more before it ends
                else:
                    self._draining.add(text)
                    tg.start_soon(self._drain, text)

    async def _drain(self, text: str) -> None:
        try:
            while True:
                self._again.discard(text)
                await self._drain_once(text)
                if text not in self._again:
                    return
        except Exception:
            logger.exception("the inbox events of %s could not be delivered now; they wait for the next poll", text)
        finally:
            self._draining.discard(text)

    async def _drain_once(self, text: str) -> None:
        key = RuntimeKey.parse(text)
        if key is None:
            logger.error("the fleet's inbox holds events for %r, which is no runtime key; they are left there", text)
            return
        lease = await self.take(key)
        if lease is None:
            return  # another host serves it: the notification is for it
        items = await self.inbox.take(text, lease)
        for index, item in enumerate(items):
            try:
                event, attachments = decode_inbox_body(item.body)
            except FrameError as exc:
                logger.error("inbox event %d for %s does not decode (%s); it is left in the inbox", item.seq, key, exc)
                continue
            try:
                await self.placement.deliver_here(key, event, attachments)
            except (AgentStopped, FactLogError, RuntimeStartFailed) as exc:
                await self.inbox.give_back(items[index:])
                if isinstance(exc, FactLogError):
                    self.stop_stale(key, exc)
                await self.let_go(key)
                logger.warning("inbox events for %s given back for later: %s", key, exc)
                return
            await self.inbox.done([item])
        await self.let_go(key)  # taken for nothing (the events went meanwhile): another host may have it

    def stop_stale(self, key: RuntimeKey, error: Exception) -> None:
        """Stop this host's runtime at ``key`` whose log refused an entry (its lease went, even if only for a
        moment): every later event would meet the same closed log. The next one respawns it under a lease
        that holds, here or on the host that has it now."""
        route = self.routes.get(key.profile) if self.routes is not None else None
        if route is not None and route.stop_runtime(key, "its fact log refused an entry"):
            logger.warning("runtime %s stopped here: %s", key, error)

    async def let_go(self, key: RuntimeKey) -> None:
        """Give the lease on ``key`` up unless a runtime of this host serves it (taken for an event that did not
        make it to a runtime here: a lease kept with nothing behind it would keep every other host out)."""
        if not self._serving(key):
            await self.keeper.release(runtime_lease_name(str(key)))

    def _serving(self, key: RuntimeKey) -> bool:
        route = self.routes.get(key.profile) if self.routes is not None else None
        return route is not None and key in route.runtimes


class FleetPlacement:
    """Takes an event to the runtime at a key on whichever host of the fleet serves it (see the module
    docstring); the ``RuntimePlacement`` of a host on a PostgreSQL store."""

    def __init__(self, fleet: Fleet):
        self._fleet = fleet

    async def deliver(
        self, route: ProfileRoute, key: RuntimeKey, event: IshikiEvent, attachments: Sequence[InboundAttachment]
    ) -> Delivery:
        """Here when this host serves ``key`` or takes it now; else into the inbox for its owner."""
        fleet = self._fleet
        if await fleet.take(key) is not None:
            try:
                runtime, entry = await route.deliver(key, event, attachments)
                return RuntimeDelivery(runtime, entry)
            except LeaseLost as exc:  # taken over meanwhile: the new owner gets it through the inbox
                fleet.stop_stale(key, exc)
            except RuntimeStartFailed:
                if fleet.held(key) is not None:
                    await fleet.let_go(key)
                    raise
                # The lease went while the runtime started (its log refused to open): the owner gets it.
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await fleet.let_go(key)
                raise
        seq = await fleet.inbox.put(str(key), encode_inbox_body(event, attachments))
        return Forwarded(key, seq)

    async def deliver_here(self, key: RuntimeKey, event: IshikiEvent, attachments: Sequence[InboundAttachment]) -> None:
        """Deliver an event taken from the inbox to the runtime at ``key`` on this host (which holds its lease)."""
        route = self._fleet.routes.lookup(event.sid, event.channel_id) if self._fleet.routes is not None else None
        if route is None or route.key_for(event.sid, event.channel_id) != key:
            # A profile reloading, or one this host's config lacks: the event waits in the inbox, not lost.
            raise AgentStopped(f"inbox event {event.message_id} for {key}: no active profile here takes it now")
        await route.deliver(key, event, attachments)


class FleetLogs:
    """Each runtime's fact log in the fleet's store, under the runtime's lease (``RuntimeLogs``)."""

    def __init__(self, fleet: Fleet):
        self._fleet = fleet

    async def open(
        self, key: RuntimeKey, home: Path, *, fsync: FsyncPolicy, clock: Clock, syncer: Syncer | None
    ) -> FactLogProtocol:
        """The runtime's ``PgFactLog`` under this host's lease (taken when free); ``FactLogError`` when another
        host serves it. Closing the log gives the lease up."""
        fleet = self._fleet
        lease = await fleet.take(key)
        if lease is None:
            raise FactLogError(f"runtime {key} is served by another host of the fleet")
        try:
            log = await PgFactLog.open(fleet.book, lease, str(key), fsync=fsync, clock=clock)
        except LeaseLost as exc:
            raise FactLogError(f"runtime {key}: {exc}") from exc
        name = runtime_lease_name(str(key))

        async def give_up() -> None:
            if log.lost:
                # Stopped by a lost lease, maybe mid-turn: the row must run out rather than go, so that the host
                # taking it over (this one too) respawns the runtime and finishes what it left.
                fleet.keeper.forget(name)
                return
            # A clean stop: whatever grant the keeper holds now goes. A runtime has one log open at a time (its
            # home's lock), so no other log uses it, and one that starts next takes the lease again.
            await fleet.keeper.release(name)

        log.on_close(give_up)
        return log


def encode_inbox_body(event: IshikiEvent, attachments: Sequence[InboundAttachment]) -> str:
    """The inbox's text of an event and its attachments (``decode_inbox_body`` reads it back)."""
    body: dict[str, Json] = {"event": event.to_dict(), "attachments": [attachment_json(a) for a in attachments]}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def decode_inbox_body(text: str) -> tuple[IshikiEvent, list[InboundAttachment]]:
    """The event and attachments of an inbox text (``FrameError`` when it is not one)."""
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise FrameError(f"not JSON: {exc}") from None
    if not isinstance(body, Mapping):
        raise FrameError("expected an object with event and attachments")
    raw = body.get("attachments") or []
    if not isinstance(raw, list):
        raise FrameError("attachments: expected a list")
    return event_from(body.get("event")), [attachment_from(a) for a in raw]
