"""Benchmark of the OneBot channel (issue 27) on the package's loopback fake implementation, as ratios against
baselines measured in the same run, over the same forward WebSocket of the same fake.

- **Events per second.** The fake writes message events (text, across 50 chats, half of them groups) into its
  forward WebSocket as fast as the link takes them:
  - baseline: a bare ``websockets`` client reading the frames and parsing each as JSON;
  - subject: a ``OneBotConnection`` in forward mode whose host's ``dispatch`` returns at once: reading,
    routing, shaping, the seen-set and its write-behind file, dispatch, in order.
  Events per second from the first frame written to the last one taken.
- **Action round trip.** ``get_status`` asked one after another, p50:
  - baseline: the fake's own, a bare client writing ``{"action", "echo"}`` and reading its answer;
  - subject: ``OneBotConnection.actions.call`` (echo correlation, deadline, answer checks).
- **Reconnect after a dropped link.** The fake closes the link; the time until the channel is linked again
  (a new WebSocket and its ``get_login_info`` answered), against a bare client doing the same two steps.

Run: ``.venv/bin/python bench/onebot_events.py [--quick] [--runs N] [--json PATH]``
(5 interleaved runs of 10,000 events, 1,000 round trips and 20 reconnects; ``--quick``: 3 runs of 2,000,
200 and 5).
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from _report import Bench, run
from _telegram import InstantHost
from ishiki_channel_onebot import OneBotAccount, OneBotConnection
from ishiki_channel_onebot.testing import FakeOneBot, group_message, private_message, running
from websockets.asyncio.client import ClientConnection, connect

from ishiki_host.core.shared import SharedObjects

CHATS = 50


class BenchHost(InstantHost):
    """``InstantHost`` (dispatch returns at once, ``done`` after ``expected``) with the shared objects a
    OneBot connection registers its API in."""

    def __init__(self, state_dir: Path, expected: int):
        super().__init__(state_dir, expected)
        self.shared = SharedObjects()


def frames(bot: FakeOneBot, count: int) -> list[str]:
    """``count`` message events as JSON, across ``CHATS`` chats (every other one a group)."""
    out = []
    for n in range(count):
        chat, said = n % CHATS, f"message {n} with an emoji 😀 and some words"
        if chat % 2:
            frame = group_message(bot.self_id, 900_000 + chat, 20_000 + chat, said, card=f"Card {chat}")
        else:
            frame = private_message(bot.self_id, 20_000 + chat, said, nickname=f"Person {chat}")
        out.append(json.dumps(frame))
    return out


def account(bot: FakeOneBot) -> OneBotAccount:
    """A forward account on ``bot`` (its QQ number given, so readiness needs no round trip)."""
    keys = {"url": bot.url, "access_token": bot.access_token, "self_id": str(bot.self_id), "backoff_max": 1}
    return OneBotAccount.from_config(keys)


async def push_all(bot: FakeOneBot, raw: list[str]) -> None:
    for frame in raw:
        await bot.push_raw(frame)


async def bare_rate(raw: list[str]) -> float:
    """The baseline reader's events per second."""
    async with FakeOneBot() as bot, connect(bot.url, additional_headers=_auth(bot)) as client:
        await client.recv()  # the lifecycle event
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(push_all, bot, raw)
            for _ in raw:
                json.loads(await client.recv())
        return len(raw) / (time.perf_counter() - start)


async def channel_rate(raw: list[str]) -> float:
    """The channel's events per second."""
    async with FakeOneBot() as bot:
        with tempfile.TemporaryDirectory() as state:
            host = BenchHost(Path(state), len(raw))
            connection = OneBotConnection(host, account(bot), rng=random.Random(1))
            async with running(connection):
                await connection.linked()
                start = time.perf_counter()
                await push_all(bot, raw)
                await host.done.wait()
                seconds = time.perf_counter() - start
            if host.count != len(raw):
                raise RuntimeError(f"the channel dispatched {host.count} of {len(raw)} events")
            return len(raw) / seconds


async def bare_round_trips(count: int) -> list[float]:
    """The fake's own: ``get_status`` by hand, one after another."""
    async with FakeOneBot() as bot, connect(bot.url, additional_headers=_auth(bot)) as client:
        await client.recv()
        return [await _bare_call(client, n) for n in range(count)]


async def _bare_call(client: ClientConnection, echo: int) -> float:
    start = time.perf_counter()
    await client.send(json.dumps({"action": "get_status", "params": {}, "echo": str(echo)}))
    while json.loads(await client.recv()).get("echo") != str(echo):
        pass
    return time.perf_counter() - start


@contextlib.asynccontextmanager
async def linked_connection() -> AsyncIterator[tuple[FakeOneBot, OneBotConnection]]:
    """A fake implementation and a connection linked to it, for the length of the block."""
    async with FakeOneBot() as bot:
        with tempfile.TemporaryDirectory() as state:
            connection = OneBotConnection(BenchHost(Path(state), 0), account(bot), rng=random.Random(1))
            async with running(connection):
                await connection.linked()
                yield bot, connection


async def channel_round_trips(count: int) -> list[float]:
    """``actions.call("get_status")``, one after another."""
    async with linked_connection() as (_, connection):
        timings = []
        for _ in range(count):
            start = time.perf_counter()
            await connection.actions.call("get_status")
            timings.append(time.perf_counter() - start)
        return timings


async def bare_reconnects(count: int) -> list[float]:
    """A bare client's new link and ``get_login_info``, ``count`` times."""
    async with FakeOneBot() as bot:
        timings = []
        for n in range(count):
            start = time.perf_counter()
            async with connect(bot.url, additional_headers=_auth(bot)) as client:
                await client.recv()  # the lifecycle event comes first
                await client.send(json.dumps({"action": "get_login_info", "params": {}, "echo": str(n)}))
                await client.recv()
                timings.append(time.perf_counter() - start)
        return timings


async def channel_reconnects(count: int) -> list[float]:
    """The time from the fake dropping the link to the channel linked again, ``count`` times."""
    async with linked_connection() as (bot, connection):
        timings = []
        for _ in range(count):
            await anyio.sleep(1.05)  # a link up this long was a working one: reconnected at once
            links = bot.connections
            start = time.perf_counter()
            await bot.drop_links()
            await bot.until(functools.partial(_more_links, bot, links), deadline=30)
            await connection.linked()
            timings.append(time.perf_counter() - start)
        return timings


def _more_links(bot: FakeOneBot, links: int) -> bool:
    return bot.connections > links


def _auth(bot: FakeOneBot) -> dict[str, str]:
    return {"Authorization": f"Bearer {bot.access_token}"}


async def measure(bench: Bench) -> None:
    """Interleaved runs of each side."""
    runs = bench.runs(quick=3, full=5)
    events, calls, drops = (2_000, 200, 5) if bench.quick else (10_000, 1_000, 20)
    async with FakeOneBot() as bot:
        raw = frames(bot, events)
    bare, channel, bare_p50, channel_p50, bare_up, channel_up = [], [], [], [], [], []
    for _ in range(runs):  # interleaved, so both sides see the same machine load
        bare.append(await bare_rate(raw))
        channel.append(await channel_rate(raw))
        bare_p50.append(statistics.median(await bare_round_trips(calls)))
        channel_p50.append(statistics.median(await channel_round_trips(calls)))
        bare_up.append(statistics.median(await bare_reconnects(drops)))
        channel_up.append(statistics.median(await channel_reconnects(drops)))
    bench.note(f"{events:,} events across {CHATS} chats, {calls} round trips, {drops} reconnects; {runs} runs")
    bench.add("OneBotConnection forward, events/s", "events/s", channel, direction="higher",
              baseline="bare WebSocket reader parsing JSON", baseline_samples=bare, paired=True)  # fmt: skip
    bench.add("action round trip (get_status), p50", "s", channel_p50,
              baseline="the fake's own round trip, p50", baseline_samples=bare_p50, paired=True)  # fmt: skip
    bench.add("reconnect after a dropped link, median", "s", channel_up,
              baseline="bare connect + get_login_info", baseline_samples=bare_up, paired=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
