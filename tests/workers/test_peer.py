"""Two peers over a real Unix socket pair: calls both ways at once, errors that cross as themselves, a dropped
or garbled link that releases every waiting call, and back-pressure at ``max_in_flight``."""

from __future__ import annotations

from collections.abc import Mapping

import anyio
import pytest
from anyio.abc import UNIXSocketStream

from ishiki_host.errors import (
    AgentStopped,
    ChannelError,
    ChannelUnavailable,
    ConfigError,
    FactLogError,
    FactLogLocked,
    ModelRateLimited,
    ResourceError,
)
from ishiki_host.jsontypes import Json
from ishiki_host.workers.peer import Handler, Peer, PeerClosed, RemoteError

pytestmark = pytest.mark.anyio


async def echo(params: dict[str, Json]) -> Json:
    return {"echo": params}


async def stopped(params: dict[str, Json]) -> Json:
    raise AgentStopped("runtime a/b is stopping")


async def unavailable(params: dict[str, Json]) -> Json:
    raise ChannelUnavailable("telegram:1 is not connected now")


async def missing(params: dict[str, Json]) -> Json:
    raise ResourceError("not_found", "asset://x is gone")


async def broken(params: dict[str, Json]) -> Json:
    raise ValueError("something nobody maps")


HANDLERS: Mapping[str, Handler] = {
    "echo": echo,
    "stopped": stopped,
    "unavailable": unavailable,
    "missing": missing,
    "broken": broken,
}


async def test_calls_go_both_ways_at_once_and_errors_cross_as_themselves(
    socket_pair: tuple[UNIXSocketStream, UNIXSocketStream],
) -> None:
    a, b = Peer(socket_pair[0], HANDLERS, label="a"), Peer(socket_pair[1], HANDLERS, label="b")
    async with anyio.create_task_group() as tg:
        await tg.start(a.run)
        await tg.start(b.run)
        results: dict[int, Json] = {}

        async def call(index: int, peer: Peer) -> None:
            results[index] = await peer.call("echo", {"n": index})

        async with anyio.create_task_group() as calls:
            for index in range(50):
                calls.start_soon(call, index, a if index % 2 else b)
        assert results == {i: {"echo": {"n": i}} for i in range(50)}
        with pytest.raises(AgentStopped, match="runtime a/b is stopping"):
            await a.call("stopped", {})
        with pytest.raises(ChannelUnavailable, match="not connected") as unavailable_error:
            await b.call("unavailable", {})
        assert unavailable_error.value.fatal is False
        with pytest.raises(ResourceError, match="asset://x is gone") as resource_error:
            await a.call("missing", {})
        assert resource_error.value.code == "not_found"
        with pytest.raises(RemoteError, match="ValueError: something nobody maps") as remote:
            await a.call("broken", {})
        assert remote.value.kind == "ValueError"
        with pytest.raises(RemoteError, match="not served here") as unknown:
            await a.call("nothing", {})
        assert unknown.value.kind == "UnknownMethod"
        tg.cancel_scope.cancel()


def raising(error: Exception) -> Handler:
    async def handler(params: dict[str, Json]) -> Json:
        raise error

    return handler


async def test_an_error_keeps_its_fields_and_a_subclass_crosses_as_its_nearest_mapped_base(
    socket_pair: tuple[UNIXSocketStream, UNIXSocketStream],
) -> None:
    passing = ChannelError("the bot's token was refreshed")
    passing.fatal = False  # set on the instance: the caller must see the same decision
    served = {
        "passing": raising(passing),
        "config": raising(ConfigError("unknown key", file="ishiki.yaml", line=4, path="channels.tg")),
        "limited": raising(ModelRateLimited("slow down", model="m1", retry_after=2.5)),
        "locked": raising(FactLogLocked("a/b is held by pid 7")),
    }
    a, b = Peer(socket_pair[0], {}, label="a"), Peer(socket_pair[1], served, label="b")
    async with anyio.create_task_group() as tg:
        await tg.start(a.run)
        await tg.start(b.run)
        with pytest.raises(ChannelError, match="token was refreshed") as channel:
            await a.call("passing", {})
        assert channel.value.fatal is False
        with pytest.raises(ConfigError) as config:
            await a.call("config", {})
        assert (config.value.file, config.value.line, config.value.path) == ("ishiki.yaml", 4, "channels.tg")
        assert str(config.value) == "ishiki.yaml:4: channels.tg: unknown key"
        with pytest.raises(ModelRateLimited) as limited:
            await a.call("limited", {})
        assert (limited.value.model, limited.value.status, limited.value.retry_after) == ("m1", 429, 2.5)
        with pytest.raises(FactLogError, match="held by pid 7") as locked:
            await a.call("locked", {})
        assert type(locked.value) is FactLogError  # FactLogLocked is not in the table: its base is
        tg.cancel_scope.cancel()


async def test_a_dropped_link_releases_the_waiting_calls(
    socket_pair: tuple[UNIXSocketStream, UNIXSocketStream],
) -> None:
    entered = anyio.Event()

    async def hang(params: dict[str, Json]) -> Json:
        entered.set()
        await anyio.sleep_forever()
        return None  # pragma: no cover

    a, b = Peer(socket_pair[0], {}, label="a"), Peer(socket_pair[1], {"hang": hang}, label="b")
    async with anyio.create_task_group() as tg:
        await tg.start(a.run)
        await tg.start(b.run)
        outcome: list[BaseException] = []

        async def waiting() -> None:
            try:
                await a.call("hang", {})
            except PeerClosed as exc:
                outcome.append(exc)

        tg.start_soon(waiting)
        await entered.wait()
        await b.aclose()  # the other side goes away while the call waits
        await a.wait_closed()
        tg.cancel_scope.cancel()
    assert len(outcome) == 1
    with pytest.raises(PeerClosed):
        await a.call("hang", {})


async def test_a_garbled_frame_resets_the_link(socket_pair: tuple[UNIXSocketStream, UNIXSocketStream]) -> None:
    a = Peer(socket_pair[0], HANDLERS, label="worker 3")
    async with anyio.create_task_group() as tg:
        await tg.start(a.run)
        await socket_pair[1].send(b"\x00\x00\x00\x05hello")
        await a.wait_closed()
        tg.cancel_scope.cancel()
    assert a.closed


async def test_no_more_is_read_while_max_in_flight_handlers_run(
    socket_pair: tuple[UNIXSocketStream, UNIXSocketStream],
) -> None:
    release = anyio.Event()
    running: list[int] = []
    two_in, three_in = anyio.Event(), anyio.Event()

    async def slow(params: dict[str, Json]) -> Json:
        running.append(int(str(params["n"])))
        if len(running) == 2:
            two_in.set()
        if len(running) == 3:
            three_in.set()
        await release.wait()
        return None

    a, b = Peer(socket_pair[0], {}, label="a"), Peer(socket_pair[1], {"slow": slow}, label="b", max_in_flight=2)
    async with anyio.create_task_group() as tg:
        await tg.start(a.run)
        await tg.start(b.run)
        for n in range(3):
            tg.start_soon(a.call, "slow", {"n": n})
        await two_in.wait()
        for _ in range(20):  # let the third request reach b's socket: it must stay unread
            await anyio.lowlevel.checkpoint()
        assert len(running) == 2
        release.set()
        await three_in.wait()  # one ended, so the third is read and run
        tg.cancel_scope.cancel()


async def test_a_caller_that_gives_up_drops_the_late_answer_and_the_link_serves_on(
    socket_pair: tuple[UNIXSocketStream, UNIXSocketStream],
) -> None:
    entered, release, answered = anyio.Event(), anyio.Event(), anyio.Event()

    async def late(params: dict[str, Json]) -> Json:
        entered.set()
        await release.wait()
        answered.set()
        return "too late"

    a, b = Peer(socket_pair[0], {}, label="a"), Peer(socket_pair[1], {"late": late, "echo": echo}, label="b")
    async with anyio.create_task_group() as tg:
        await tg.start(a.run)
        await tg.start(b.run)
        with anyio.CancelScope() as gave_up:

            async def give_up() -> None:
                await entered.wait()
                gave_up.cancel()

            tg.start_soon(give_up)
            await a.call("late", {})
        assert gave_up.cancelled_caught
        release.set()
        await answered.wait()
        assert await a.call("echo", {"n": 1}) == {"echo": {"n": 1}}  # the late answer went nowhere
        assert not a.closed
        tg.cancel_scope.cancel()
