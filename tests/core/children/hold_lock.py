"""Child process: open a fact log, say so, hold it until stdin closes (or SIGKILL)."""

from __future__ import annotations

import sys

import anyio

from ishiki_host.core.factlog import FactLog


async def main(path: str) -> None:
    log = await FactLog.open(path)
    await log.append("custom", {"kind": "child"})
    print("locked", flush=True)
    await anyio.to_thread.run_sync(sys.stdin.read)
    await log.close()
    print("closed", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
