"""Child process: open a fact log whose tail is torn and stop dead where it is cut away, for the parent's SIGKILL.

``before``: at the ``ftruncate`` that cuts the torn tail off the log, before it runs; ``after``: right after it.
The child reports "at cut" on stdout and waits; its log records go to stderr, as ``ishiki run``'s do. Only the OS
edge (``os.ftruncate``) is wrapped; the fact log's code runs unchanged.
"""

from __future__ import annotations

import logging
import os
import sys
import time

import anyio

from ishiki_host.core.factlog import FactLog

real_ftruncate = os.ftruncate


def stop_at_cut(moment: str) -> None:
    def ftruncate(fd: int, length: int) -> None:
        if moment == "after":
            real_ftruncate(fd, length)
        print("at cut", flush=True)
        while True:  # the parent kills us here
            time.sleep(60)

    os.ftruncate = ftruncate


async def main(path: str, moment: str) -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    stop_at_cut(moment)
    await FactLog.open(path)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
