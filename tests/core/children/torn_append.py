"""Child process: append entries, then die by SIGKILL in the middle of writing one.

The kernel may stop a large write part-way when the writer is killed; to make that moment certain, the
write of the entry marked ``big`` is done in two halves (what a partial ``write(2)`` leaves), and the child
reports "torn" after the first half and waits for the parent's SIGKILL. Only the OS edge (``os.write``) is
wrapped; the fact log's code runs unchanged.
"""

from __future__ import annotations

import os
import sys
import time

import anyio

from ishiki_host.core.factlog import FactLog

real_write = os.write


def half_then_wait(fd: int, data: bytes | memoryview) -> int:
    data = bytes(data)
    if b'"big"' not in data:
        return real_write(fd, data)
    written = real_write(fd, data[: len(data) // 2])
    print("torn", flush=True)
    while True:  # the parent kills us here
        time.sleep(60)
    return written


async def main(path: str) -> None:
    log = await FactLog.open(path, fsync="never")
    for index in range(5):
        await log.append("message", {"role": "user", "parts": [{"type": "text", "text": f"m{index}"}]})
    os.write = half_then_wait
    await log.append("custom", {"kind": "big", "blob": "x" * 100_000})


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
