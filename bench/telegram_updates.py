"""Benchmark of the Telegram channel's inbound path, as a ratio against a baseline measured in the same run.

- connection: 10,000 updates across 100 chats, queued in the loopback fake Bot API, received by a
  ``TelegramConnection`` (long polling, shaping, dispatch, offset saved after each update) whose host's
  ``dispatch`` returns at once; updates per second from the first poll until the last event is dispatched.
- baseline: the same 10,000 updates drained from the same fake server by a plain httpx ``getUpdates`` loop
  (limit 100, offset confirmation), so the ratio is the channel's own cost per update.

Run: ``.venv/bin/python bench/telegram_updates.py [--quick] [--runs N] [--json PATH]`` (7 interleaved runs,
paired; ``--quick``: 3 runs of 2,000 updates).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from _report import Bench, run
from _telegram import InstantHost, queue_messages
from ishiki_channel_telegram import TelegramAccount, TelegramConnection
from ishiki_channel_telegram.testing import FakeBotAPI, running


async def _through_connection(updates: int, chats: int) -> float:
    async with FakeBotAPI() as server:
        queue_messages(server, updates, chats)
        with tempfile.TemporaryDirectory() as state:
            host = InstantHost(Path(state), updates)
            account = TelegramAccount.from_config({"token": server.token, "api_base": server.url, "poll_timeout": 0})
            connection = TelegramConnection(host, account, rng=host.rng)
            async with running(connection):
                start = time.perf_counter()
                await server.until(lambda: server.count("getUpdates") > 0, deadline=60)
                with anyio.fail_after(600):
                    await host.done.wait()
                elapsed = time.perf_counter() - start
    return elapsed


async def _raw_loop(updates: int, chats: int) -> float:
    async with FakeBotAPI() as server, httpx.AsyncClient() as client:
        queue_messages(server, updates, chats)
        url = f"{server.url}/bot{server.token}/getUpdates"
        received, offset = 0, None
        start = time.perf_counter()
        while received < updates:
            body = (await client.post(url, json={"offset": offset, "limit": 100, "timeout": 0})).json()
            batch = body["result"]
            received += len(batch)
            offset = batch[-1]["update_id"] + 1
        return time.perf_counter() - start


def measure(bench: Bench) -> None:
    """Interleaved runs of the connection and the raw loop over the same queued updates."""
    runs = bench.runs(quick=3, full=7)
    updates, chats = (2_000, 100) if bench.quick else (10_000, 100)
    connection, raw = [], []
    for _ in range(runs):  # interleaved, so both sides see the same machine load
        connection.append(updates / anyio.run(_through_connection, updates, chats))
        raw.append(updates / anyio.run(_raw_loop, updates, chats))
    bench.add(f"TelegramConnection, {updates:,} updates across {chats} chats", "updates/s", connection,
              direction="higher", baseline="raw getUpdates loop", baseline_samples=raw, paired=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
