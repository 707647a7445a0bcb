"""``python -m ishiki_host.cli.worker``: one worker process of ``ishiki run --workers N`` (started by the
supervisor, never by hand; ``ishiki_host.workers.worker``).

The worker logs to stderr (the supervisor's stderr, inherited) at the supervisor's level and format, each line
naming the worker. It ignores SIGINT: Ctrl-C on a terminal reaches every process of the group, and the
supervisor decides the stop (it drains the workers first). SIGTERM stops it cleanly, as its supervisor would.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from ishiki_host import eventloop
from ishiki_host.cli._hints import ModelHint, raw_providers
from ishiki_host.cli.run import FORMATS, LEVELS, setup_logging
from ishiki_host.workers.worker import serve_worker

__all__ = ["main"]


class _WorkerName(logging.Filter):
    """Puts ``worker N`` in front of every message, so the operator tells the workers' lines apart."""

    def __init__(self, index: int):
        super().__init__()
        self._prefix = f"[worker {index}] "

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "_worker_named", False):
            record.msg = f"{self._prefix}{record.msg}"
            record._worker_named = True
        return True


def main(argv: list[str] | None = None) -> int:
    """Parse the supervisor's arguments and run the worker; its exit status."""
    parser = argparse.ArgumentParser(prog="ishiki worker", description="A worker of `ishiki run --workers N`.")
    parser.add_argument("dir", help="the config directory")
    parser.add_argument("--socket", required=True, help="the supervisor's Unix socket")
    parser.add_argument("--index", type=int, required=True, help="this worker's index, from 0")
    parser.add_argument("--count", type=int, required=True, help="how many workers there are")
    parser.add_argument("--log-level", choices=LEVELS, default="info")
    parser.add_argument("--log-format", choices=FORMATS, default="text")
    parser.add_argument("--event-loop", choices=("auto", "uvloop", "asyncio"), default="auto")
    parser.add_argument("--slots", choices=("lease", "split"), default="split", help="how max_concurrency is shared")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    setup_logging(args.log_level, args.log_format)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_WorkerName(args.index))
    code: int = eventloop.run(_serve, args, loop=args.event_loop)
    return code


async def _serve(args: argparse.Namespace) -> int:
    import anyio

    terminated = anyio.Event()
    async with anyio.create_task_group() as tg:
        with anyio.open_signal_receiver(signal.SIGTERM) as received:

            async def on_term() -> None:
                async for _ in received:
                    terminated.set()

            tg.start_soon(on_term)
            root = Path(args.dir)
            raw = raw_providers(root)
            code = await serve_worker(
                root,
                Path(args.socket),
                args.index,
                args.count,
                terminated,
                lambda gateway: ModelHint(gateway, raw),
                args.slots,
            )
            tg.cancel_scope.cancel()
    return code


if __name__ == "__main__":
    sys.exit(main())
