"""Hosts of one fleet in this process (``store: <PostgreSQL>``): a runtime served by one host at a time, an event
handed to any host answered once by the runtime's owner, a lost lease stopping the runtime, a dead host's
runtime taken over. The fleet of real ``ishiki run`` processes is ``test_fleet_processes.py``."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.channels.codec import FrameError
from ishiki_host.config.host import FleetSettings
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.messages import Message
from ishiki_host.host.fleet import Fleet, Forwarded, decode_inbox_body, encode_inbox_body
from ishiki_host.host.routes import ProfileRoute
from ishiki_host.store.pg.facts import PgFactLog
from ishiki_host.store.pg.leases import LeaseBook, LeaseLost, runtime_lease_name
from ishiki_host.store.pg.schema import migrate
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host import TestHost, host_yaml
from ishiki_host.testing.host_fixtures import MakeHost
from ishiki_host.testing.postgres import PostgresServer

pytestmark = pytest.mark.anyio

KEY = RuntimeKey.for_channel("ana", "fake:bot", "private:1")


def fleet_yaml(url: str, name: str) -> str:
    return host_yaml(extra=f"store: {url}\nfleet: {{name: {name}, lease_seconds: 30, poll_seconds: 0.2}}\n")


def echo(server: FakeOpenAIServer) -> None:
    def answer(request: RecordedRequest) -> Reply:
        user = [m["content"] for m in request.json["messages"] if m["role"] == "user"][-1]
        return Reply(tool_calls=(ScriptedCall("send_message", {"messages": [f"re: {user}"]}),))

    server.default = answer


async def connected(th: TestHost, sid: str = "fake:bot") -> None:
    """Until the host runs a connection of ``sid`` (woken by its channel directory)."""
    changed = anyio.Event()
    remove = th.host.directory.add_listener(changed.set)
    try:
        with anyio.fail_after(30):
            while th.host.directory.connection(sid) is None:
                await changed.wait()
                changed = anyio.Event()
                remove()
                remove = th.host.directory.add_listener(changed.set)
    finally:
        remove()


def route(th: TestHost) -> ProfileRoute:
    found = th.host.routes.get("ana")
    assert found is not None
    return found


async def test_an_event_handed_to_another_host_is_answered_once_by_the_runtimes_owner(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, postgres_url: str
) -> None:
    echo(fake_openai)
    profiles = {"ana": profile_yaml()}
    async with (
        make_host(profiles=profiles, host=fleet_yaml(postgres_url, "a")) as a,
        make_host(profiles=profiles, host=fleet_yaml(postgres_url, "b")) as b,
    ):
        bot_a, bot_b = a.channel(), b.channel()
        first = await bot_a.say("one", message_id="m1")
        await first.settled()
        forwarded = await bot_b.say("two", message_id="m2")
        owner = route(a).runtimes[KEY]
        with anyio.fail_after(60):
            await bot_a.wait_sent(2)
        log = owner.context.log
        assert isinstance(log, PgFactLog)
        assert a.host.fleet is not None
        assert b.host.fleet is not None
        held = a.host.fleet.held(KEY)
        served_by_b = dict(route(b).runtimes)
        status = a.host.status()["fleetHost"]
    assert isinstance(forwarded, Forwarded)
    assert forwarded.runtime_key == str(KEY)
    assert [m.text for m in bot_a.sent] == ["re: one", "re: two"]
    assert bot_b.sent == []
    assert served_by_b == {}
    assert held is not None
    assert held.holder == a.host.fleet.holder
    assert (status["holder"], status["runtimeLeases"], status["accountLeases"]) == (held.holder, 1, [])


async def test_a_runtime_stopped_here_gives_its_lease_up_for_the_next_host(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, postgres_url: str
) -> None:
    echo(fake_openai)
    profiles = {"ana": profile_yaml()}
    async with make_host(profiles=profiles, host=fleet_yaml(postgres_url, "a")) as a:
        await (await a.channel().say("one", message_id="m1")).settled()
    async with make_host(profiles=profiles, host=fleet_yaml(postgres_url, "b")) as b:
        bot = b.channel()
        second = await bot.say("two", message_id="m2")
        await second.settled()
        runtime = route(b).runtimes[KEY]
        entries = await runtime.context.log.read_back(list)
        users = [Message.from_dict(e.data).text for e in entries if e.type == "message" and e.data["role"] == "user"]
    assert second.entry_id is not None  # taken here: the lease was given up when host a stopped
    assert users == ["two", "one"]  # newest first: the log came from the store, not from host b's disk
    assert [m.text for m in bot.sent] == ["re: two"]


async def test_a_lost_lease_stops_the_runtime_and_the_next_event_goes_to_the_new_owner(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, postgres_url: str
) -> None:
    echo(fake_openai)
    profiles = {"ana": profile_yaml()}
    async with (
        make_host(profiles=profiles, host=fleet_yaml(postgres_url, "a")) as a,
        make_host(profiles=profiles, host=fleet_yaml(postgres_url, "b")) as b,
    ):
        bot = a.channel()
        await (await bot.say("one", message_id="m1")).settled()
        fleet_a, fleet_b = a.host.fleet, b.host.fleet
        assert fleet_a is not None
        assert fleet_b is not None
        name = runtime_lease_name(str(KEY))
        async with fleet_a.pool.connection() as conn:  # host a froze past its lease: it expired on the database
            await conn.execute("UPDATE ishiki_leases SET expires_at = clock_timestamp() WHERE name = %s", (name,))
        assert await fleet_b.take(KEY) is not None  # host b took the runtime over
        runtime = route(a).runtimes[KEY]
        await fleet_a.keeper.renew_all()  # host a wakes: its renewal is refused, and its runtime stops
        stopped_at_once = KEY not in route(a).runtimes
        with anyio.fail_after(30):
            await runtime.stop()  # waits for the stop the lost lease began
        await fleet_b.keeper.release(name)
        delivery = await bot.say("two", message_id="m2")
        await delivery.settled()
    assert stopped_at_once
    assert delivery.entry_id is not None
    assert delivery.runtime_key == str(KEY)
    assert [m.text for m in bot.sent] == ["re: one", "re: two"]


async def test_a_dead_hosts_runtime_is_taken_over_and_its_waiting_events_answered(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, postgres_url: str
) -> None:
    echo(fake_openai)
    profiles = {"ana": profile_yaml()}
    async with make_host(profiles=profiles, host=fleet_yaml(postgres_url, "b")) as b:
        fleet = b.host.fleet
        assert fleet is not None
        async with fleet.pool.connection() as conn:  # a host that died holding the runtime, one event waiting
            await conn.execute(
                "INSERT INTO ishiki_leases VALUES (%s, 'dead/0', nextval('ishiki_lease_tokens'), clock_timestamp())",
                (runtime_lease_name(str(KEY)),),
            )
        bot = b.channel()
        event = bot.event("while you were away", message_id="m9")
        await fleet.inbox.put(str(KEY), encode_inbox_body(event, ()))
        with anyio.fail_after(60):
            await bot.wait_sent(1)  # the inbox's poll finds it: its key's lease is over
        holder = fleet.held(KEY)
    assert [m.text for m in bot.sent] == ["re: while you were away"]
    assert holder is not None
    assert holder.holder == fleet.holder


def test_an_inbox_body_that_is_not_an_event_is_refused_by_name() -> None:
    with pytest.raises(FrameError, match="not JSON"):
        decode_inbox_body("{")
    with pytest.raises(FrameError, match="attachments: expected a list"):
        decode_inbox_body('{"event": {}, "attachments": 3}')


async def test_an_exclusive_account_runs_on_one_host_and_the_other_takes_it_when_it_stops(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, postgres_url: str
) -> None:
    echo(fake_openai)
    profiles = {"ana": profile_yaml()}
    exclusive = fleet_yaml(postgres_url, "a").replace("{self_id: bot}", "{self_id: bot, exclusive: true}")
    async with make_host(profiles=profiles, host=exclusive) as a:
        await connected(a)
        async with make_host(profiles=profiles, host=exclusive.replace("name: a", "name: b")) as b:
            standby = b.host.channels.status()["fake#0"]["state"]
            running = a.host.channels.status()["fake#0"]["state"]
            b_ready = b.host.report()["ready"]
            assert b.host.fleet is not None
            bot = a.channel()
            await b.host.fleet.inbox.put(str(KEY), encode_inbox_body(bot.event("hi", message_id="x1"), ()))
            with anyio.fail_after(60):
                await bot.wait_sent(1)  # answered by the host that runs the account, never by one standing by
            served_by_b = dict(route(b).runtimes)
        # host b stopped while standing by; now host a stops and gives the account up
    async with make_host(profiles=profiles, host=exclusive.replace("name: a", "name: c")) as c:
        await connected(c)
        taken = c.host.channels.status()["fake#0"]["state"]
    assert (running, standby, taken) == ("running", "standby", "running")
    assert [m.text for m in bot.sent] == ["re: hi"]
    assert served_by_b == {}
    assert b_ready == {"ready": True, "problems": []}  # standing by is not a fault


async def test_the_database_going_away_pauses_the_host_and_nothing_is_acknowledged_until_it_is_back(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    echo(fake_openai)
    with PostgresServer() as server:  # its own server: this test stops it
        url = server.create_database("away")
        async with make_host(profiles={"ana": profile_yaml()}, host=fleet_yaml(url, "a")) as a:
            bot = a.channel()
            await (await bot.say("one", message_id="m1")).settled()
            server.pause()
            try:
                async with anyio.create_task_group() as tg:
                    taken: list[object] = []

                    async def hand_in() -> None:
                        taken.append(await bot.say("two", message_id="m2"))

                    tg.start_soon(hand_in)
                    with anyio.move_on_after(1):  # however long it waits, it must not be taken meanwhile
                        await bot.wait_sent(2)
                    acknowledged_while_away = list(taken)
                    server.resume()
            finally:
                server.resume()
            with anyio.fail_after(60):
                await bot.wait_sent(2)
    assert acknowledged_while_away == []
    assert [m.text for m in bot.sent] == ["re: one", "re: two"]


async def test_a_send_late_in_the_lease_is_confirmed_with_the_database_and_refused_once_the_lease_is_gone(
    pg_pool: AsyncConnectionPool[Any], postgres_url: str
) -> None:
    clock = FakeClock()
    fleet = Fleet(pg_pool, postgres_url, FleetSettings("a", lease_seconds=30, poll_seconds=1), clock)
    await migrate(pg_pool)
    assert await fleet.take(KEY) is not None
    await fleet.fence(KEY)  # most of the lease left: at once
    await clock.advance(25)  # a renewal that is late: less than a quarter left on this host's clock
    await fleet.fence(KEY)  # still this host's under the same token: confirmed (and renewed), the send goes
    assert fleet.keeper.remaining(runtime_lease_name(str(KEY))) == 30
    other = LeaseBook(pg_pool, "b/1", seconds=30)
    async with pg_pool.connection() as conn:  # the lease ran out on the database, and host b took the runtime
        await conn.execute("UPDATE ishiki_leases SET expires_at = clock_timestamp()")
    assert await other.acquire(runtime_lease_name(str(KEY))) is not None
    await clock.advance(25)
    with pytest.raises(LeaseLost, match="is not sent"):
        await fleet.fence(KEY)
