"""A tiny worker process for the pool's tests: ``python pool_worker.py SOCKET INDEX MODE``.

MODE ``serve`` says hello and serves ``echo`` (with its pid) and ``stop``; ``config`` exits with the status of a
config directory that cannot be used; ``silent`` connects and never says hello.
"""

from __future__ import annotations

import os
import sys

import anyio

from ishiki_host.jsontypes import Json
from ishiki_host.workers.peer import Peer
from ishiki_host.workers.pool import CONFIG_UNUSABLE
from ishiki_host.workers.wire import write_frame


async def main(socket_path: str, index: int, mode: str) -> int:
    if mode == "config":
        return CONFIG_UNUSABLE
    link = await anyio.connect_unix(socket_path)
    if mode == "silent":
        await anyio.sleep_forever()
    await write_frame(link, {"hello": {"index": index, "pid": os.getpid()}})
    stop = anyio.Event()

    async def echo(params: dict[str, Json]) -> Json:
        return {"pid": os.getpid(), "params": params}

    async def stopping(params: dict[str, Json]) -> Json:
        stop.set()
        return None

    peer = Peer(link, {"echo": echo, "stop": stopping}, label="supervisor")
    async with anyio.create_task_group() as tg:
        await tg.start(peer.run)

        async def link_gone() -> None:
            await peer.wait_closed()
            stop.set()

        tg.start_soon(link_gone)
        await stop.wait()
        tg.cancel_scope.cancel()
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1], int(sys.argv[2]), sys.argv[3]))
