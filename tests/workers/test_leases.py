"""Slot leases over real Unix socket pairs: two workers' calls share the supervisor's scheduler (one limit,
interactive first, background deferral across workers); a request cancelled while waiting, or granted as it gave
up, holds no slot; a worker whose link dies gives back every lease; leases asked before the link is served wait."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from anyio.abc import TaskGroup, UNIXSocketStream

from ishiki_host.config.models import ModelsConfig, ModelSpec, ProviderConfig
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import Priority
from ishiki_host.gateway.scheduler import Scheduler, SchedulerConfig
from ishiki_host.jsontypes import Json
from ishiki_host.workers.leases import LeaseClient, LeaseLink
from ishiki_host.workers.peer import Peer, PeerClosed

pytestmark = pytest.mark.anyio


@dataclass
class Desk:
    """The supervisor's gateway as the leases see it: a real scheduler and a models config."""

    scheduler: Scheduler
    config: ModelsConfig

    def lane(self, key: str) -> Json:
        return self.scheduler.status()["p"][key]  # type: ignore[index,call-overload]


def desk(clock: FakeClock, limit: int) -> Desk:
    provider = ProviderConfig(id="p", api="openai-completions", models=(ModelSpec("m"),), max_concurrency=limit)
    return Desk(
        Scheduler(clock, SchedulerConfig(interactive_grace_seconds=0.0)), ModelsConfig(providers={"p": provider})
    )


@dataclass
class Worker:
    """One worker's calls over its own link: each takes a leased slot, notes its name, holds it until finished."""

    name: str
    client: LeaseClient
    link: LeaseLink
    peer: Peer  # the worker's end of the link
    supervisor: Peer  # the supervisor's end
    tg: TaskGroup
    started: list[str]
    release: dict[str, anyio.Event] = field(default_factory=dict)
    failed: dict[str, BaseException] = field(default_factory=dict)
    scopes: dict[str, anyio.CancelScope] = field(default_factory=dict)

    async def start(self, name: str, priority: Priority, *, limit: int = 8) -> None:
        self.release[name] = anyio.Event()
        self.tg.start_soon(self._run, name, priority, limit)
        await wait_all_tasks_blocked()

    async def _run(self, name: str, priority: Priority, limit: int) -> None:
        with self.scopes.setdefault(name, anyio.CancelScope()):
            try:
                async with self.client.slot("p", limit, priority):
                    self.started.append(name)
                    await self.release[name].wait()
            except PeerClosed as exc:
                self.failed[name] = exc

    async def finish(self, name: str) -> None:
        self.release[name].set()
        await wait_all_tasks_blocked()


@asynccontextmanager
async def linked(the_desk: Desk, tg: TaskGroup, name: str, started: list[str], *, serve: bool = True
                 ) -> AsyncIterator[Worker]:  # fmt: skip
    """A worker linked to the supervisor over a real socket pair; the link is closed at the end."""
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    supervisor_end, worker_end = await UNIXSocketStream.from_socket(left), await UNIXSocketStream.from_socket(right)
    link = LeaseLink(lambda: the_desk)
    supervisor = Peer(supervisor_end, link.handlers(), label=name)
    client: LeaseClient | None = None

    async def granted(params: dict[str, Json]) -> Json:
        assert client is not None
        return await client.granted(params)

    worker = Peer(worker_end, {"slot.granted": granted}, label="supervisor")
    client = LeaseClient(worker)
    await tg.start(supervisor.run)
    await tg.start(worker.run)
    tg.start_soon(client.watch)
    if serve:
        tg.start_soon(link.serve, supervisor)
    try:
        yield Worker(name, client, link, worker, supervisor, tg, started)
    finally:
        await worker.aclose()
        await supervisor.aclose()


async def test_two_workers_share_one_limit_interactive_first_and_background_defers_across_them(
    fake_clock: FakeClock,
) -> None:
    the_desk = desk(fake_clock, limit=2)  # the supervisor's reading of max_concurrency wins over the workers' 8
    started: list[str] = []
    async with (
        anyio.create_task_group() as tg,
        linked(the_desk, tg, "a", started) as a,
        linked(the_desk, tg, "b", started) as b,
    ):
        await a.start("a1", "interactive")
        await b.start("b1", "background")
        assert started == ["a1"]  # a slot is free, but an interactive call is in flight on the other worker
        await a.start("a2", "interactive")
        await b.start("b2", "interactive")
        assert started == ["a1", "a2"]
        assert (the_desk.lane("in_flight"), the_desk.lane("waiting_interactive")) == (2, 1)
        assert the_desk.lane("waiting_background") == 1
        await a.finish("a1")
        assert started == ["a1", "a2", "b2"]  # interactive before the background call that came first
        await a.finish("a2")
        await b.finish("b2")
        assert started == ["a1", "a2", "b2", "b1"]  # no interactive call left on either worker
        assert (b.link.held, b.link.waiting, a.link.held) == (1, 0, 0)
        assert b.client.status() == {}  # no lanes of its own: the supervisor's scheduler shows them all
        await b.finish("b1")
        assert (the_desk.lane("in_flight"), the_desk.lane("granted")) == (0, 4)
        assert (a.link.held, a.link.waiting, b.link.held, b.link.waiting) == (0, 0, 0, 0)
        tg.cancel_scope.cancel()


async def test_a_request_cancelled_while_waiting_or_as_it_is_granted_holds_no_slot(fake_clock: FakeClock) -> None:
    the_desk = desk(fake_clock, limit=1)
    started: list[str] = []
    async with anyio.create_task_group() as tg, linked(the_desk, tg, "a", started) as a:
        await a.start("held", "interactive")
        await a.start("gives up", "interactive")
        assert the_desk.lane("waiting_interactive") == 1
        a.scopes["gives up"].cancel()
        await wait_all_tasks_blocked()
        assert (the_desk.lane("in_flight"), the_desk.lane("waiting_interactive")) == (1, 0)

        await a.start("gives up as granted", "interactive")
        a.release["held"].set()  # the supervisor grants the waiting one while the worker withdraws it
        a.scopes["gives up as granted"].cancel()
        await wait_all_tasks_blocked()
        assert the_desk.lane("in_flight") == 0
        await a.start("next", "interactive")  # the slot is free: nothing leaked
        assert started == ["held", "next"]
        await a.finish("next")
        assert (the_desk.lane("in_flight"), a.link.held, a.link.waiting) == (0, 0, 0)
        tg.cancel_scope.cancel()


async def test_the_leases_of_a_worker_whose_link_dies_are_given_back(fake_clock: FakeClock) -> None:
    the_desk = desk(fake_clock, limit=1)
    started: list[str] = []
    async with (
        anyio.create_task_group() as tg,
        linked(the_desk, tg, "a", started) as a,
        linked(the_desk, tg, "b", started) as b,
    ):
        await a.start("a held", "interactive")
        await a.start("a waiting", "interactive")
        await b.start("b waiting", "interactive")
        assert (the_desk.lane("in_flight"), the_desk.lane("waiting_interactive")) == (1, 2)
        await a.peer.aclose()  # worker a dies: its link is gone
        await wait_all_tasks_blocked()
        assert started == ["a held", "b waiting"]  # a's slot was given back, a's request withdrawn
        assert (the_desk.lane("in_flight"), the_desk.lane("waiting_interactive")) == (1, 0)
        assert isinstance(a.failed["a waiting"], PeerClosed)  # the worker's waiting call does not hang
        assert (a.link.held, a.link.waiting) == (0, 0)
        await b.finish("b waiting")
        assert the_desk.lane("in_flight") == 0
        tg.cancel_scope.cancel()


async def test_leases_asked_before_the_link_is_served_wait_for_it(fake_clock: FakeClock) -> None:
    the_desk = desk(fake_clock, limit=1)
    started: list[str] = []
    async with anyio.create_task_group() as tg, linked(the_desk, tg, "a", started, serve=False) as a:
        await a.start("early", "interactive")
        await a.start("withdrawn early", "interactive")
        a.scopes["withdrawn early"].cancel()
        await wait_all_tasks_blocked()
        assert started == []
        assert the_desk.scheduler.status() == {}  # nothing reached the scheduler yet
        tg.start_soon(a.link.serve, a.supervisor)  # the supervisor serves the link once the worker is ready
        await wait_all_tasks_blocked()
        assert started == ["early"]
        await a.finish("early")
        assert (the_desk.lane("in_flight"), the_desk.lane("granted")) == (0, 1)  # the withdrawn one never went
        tg.cancel_scope.cancel()


async def test_a_malformed_lease_resets_the_link(fake_clock: FakeClock) -> None:
    the_desk = desk(fake_clock, limit=1)
    async with anyio.create_task_group() as tg, linked(the_desk, tg, "a", []) as a:
        await a.peer.notify("slot.lease", {"id": 1, "provider": "p", "limit": 1, "priority": "urgent"})
        await a.peer.wait_closed()
        assert the_desk.scheduler.status() == {}
        tg.cancel_scope.cancel()
