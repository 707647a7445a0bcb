"""Benchmark of the Telegram channel's webhook mode against its long polling, in the same run.

Both sides are a ``TelegramConnection`` whose host's ``dispatch`` returns at once, taking the same queued
updates (10,000 across 100 chats) from the same loopback fake Bot API:

- baseline, polling: ``getUpdates`` in batches of 100, shaping, dispatch, offset saved after each update;
  updates per second from the first poll until the last event is dispatched.
- webhook: the connection serves its route on the host's real HTTP server (uvicorn and Starlette on a loopback
  port); the fake posts each update there with the secret header (``FakeBotAPI.deliver``) and waits for the
  200, which comes once the update is dispatched; updates per second from the first post until the last 200.
  Measured with 1 connection at a time (in order) and with 40, Telegram's default ``max_connections``.

Everything runs in one process on one loop, the fake included: webhook mode pays an HTTP request and response
per update where polling pays one per 100, and the fake's side of that (httpx posting, or serving and encoding
the batches) is in both figures.

Run: ``.venv/bin/python bench/telegram_webhook.py [--quick] [--runs N] [--json PATH]`` (5 interleaved runs,
paired; ``--quick``: 3 runs of 1,000 updates).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import anyio
from _report import Bench, run
from _telegram import InstantHost, queue_messages
from ishiki_channel_telegram import TelegramAccount, TelegramConnection
from ishiki_channel_telegram.testing import PUBLIC_URL, FakeBotAPI, running

from ishiki_host import eventloop
from ishiki_host.testing import serve_http

CONNECTIONS = (1, 40)


async def _polling(updates: int, chats: int) -> float:
    async with FakeBotAPI() as server:
        queue_messages(server, updates, chats)
        with tempfile.TemporaryDirectory() as state:
            host = InstantHost(Path(state), updates)
            account = TelegramAccount.from_config({"token": server.token, "api_base": server.url, "poll_timeout": 0})
            async with running(TelegramConnection(host, account, rng=host.rng)):
                await server.until(lambda: server.count("getUpdates") > 0, deadline=60)
                start = time.perf_counter()
                with anyio.fail_after(600):
                    await host.done.wait()
                return time.perf_counter() - start


async def _webhook(updates: int, chats: int, connections: int) -> float:
    async with FakeBotAPI() as server, serve_http(public_url=PUBLIC_URL, max_connections=200) as ingress:
        assert ingress.base_url is not None
        server.proxy(PUBLIC_URL, ingress.base_url)
        queue_messages(server, updates, chats)
        with tempfile.TemporaryDirectory() as state:
            host = InstantHost(Path(state), updates, http=ingress)
            keys = {"token": server.token, "api_base": server.url, "mode": "webhook"}
            account = TelegramAccount.from_config({**keys, "webhook_max_connections": connections})
            async with running(TelegramConnection(host, account, rng=host.rng)):
                start = time.perf_counter()
                deliveries = await server.deliver(concurrency=connections)
                elapsed = time.perf_counter() - start
    refused = [d for d in deliveries if not d.ok]
    if refused or host.count != updates:
        raise RuntimeError(f"webhook: {host.count} of {updates} dispatched; refused: {refused[:3]}")
    return elapsed


def measure(bench: Bench) -> None:
    """Interleaved runs: polling, then webhook mode at each connection count, over the same queued updates."""
    runs = bench.runs(quick=3, full=5)
    updates, chats = (1_000, 100) if bench.quick else (10_000, 100)
    polling: list[float] = []
    webhook: dict[int, list[float]] = {n: [] for n in CONNECTIONS}
    for _ in range(runs):  # interleaved, so every side sees the same machine load
        polling.append(updates / eventloop.run(_polling, updates, chats))
        for n in CONNECTIONS:
            webhook[n].append(updates / eventloop.run(_webhook, updates, chats, n))
    loop = "uvloop" if eventloop.uvloop_installed() else "asyncio"
    bench.note(f"{updates:,} updates across {chats} chats, on {loop} (the loop `ishiki run` takes)")
    for n, samples in webhook.items():
        name = f"webhook mode, {n} connection{'s' if n > 1 else ''}, {updates:,} updates"
        bench.add(name, "updates/s", samples, direction="higher", baseline="long polling (getUpdates, 100 a batch)",
                  baseline_samples=polling, paired=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
