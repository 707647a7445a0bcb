"""``ishiki run [DIR]``: run a config directory until signalled (or, on a piped console, until its input ends).

Exit status: 0 after a normal stop (SIGINT, SIGTERM, the end of piped console input), 1 when no profile is
ready (the reasons are printed) or the host could not start, 2 when DIR is not a config directory. Logs go
to stderr at ``log_level`` of ishiki.yaml (``--log-level`` overrides it); stdout is the console channel's.
SIGHUP reloads the config (so does ``ishiki reload DIR``); a second SIGINT or SIGTERM exits at once.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ishiki_host.host.host import Host
    from ishiki_host.plugins.configdir import ConfigDir

from ishiki_host.cli._args import add_dir_argument

__all__ = ["register", "run", "setup_logging"]

LEVELS = ("debug", "info", "warning", "error", "critical")
_QUIET = {"httpx": logging.WARNING, "httpcore": logging.WARNING, "stevedore": logging.WARNING}


def register(subparsers: Any) -> None:
    """Add the ``run`` command."""
    parser = subparsers.add_parser(
        "run",
        help="run a config directory",
        description="Run the ready profiles of DIR in the channels they claim, until SIGINT/SIGTERM (or the end "
        "of piped console input). Exit 0 after a normal stop, 1 when no profile is ready, 2 when DIR is not a "
        "config directory. SIGHUP (or `ishiki reload DIR`) reloads the config.",
    )
    add_dir_argument(parser)
    parser.add_argument("--log-level", choices=LEVELS, help="override log_level of ishiki.yaml")
    parser.set_defaults(handler=run)


def setup_logging(level: str) -> None:
    """Log to stderr at ``level``; per-request and per-retry chatter of libraries and the gateway only in debug
    (the host says in one line when a model fails over)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    if level != "debug":
        for name, floor in {**_QUIET, "ishiki_host.gateway": logging.ERROR}.items():
            logging.getLogger(name).setLevel(floor)


def run(args: argparse.Namespace) -> int:
    """Run ``args.dir``; return the exit status."""
    from ishiki_host import eventloop
    from ishiki_host.errors import ConfigDirError
    from ishiki_host.plugins.configdir import load_config_dir

    root = Path(args.dir)
    try:
        config = load_config_dir(root)
    except ConfigDirError as exc:
        print(f"ishiki run: {exc.message}", file=sys.stderr)
        return 2
    setup_logging(args.log_level or config.host.log_level)
    if not config.ready():
        _explain_not_ready(config)
        return 1
    try:
        return eventloop.run(_serve, root, config, loop=config.host.event_loop)
    except KeyboardInterrupt:
        return 130


def _explain_not_ready(config: ConfigDir) -> None:
    from ishiki_host.cli.check import report

    print("ishiki run: no profile is ready, so there is nothing to run:", file=sys.stderr)
    for line in report(config):
        print(f"  {line}", file=sys.stderr)


async def _serve(root: Path, config: ConfigDir) -> int:
    import anyio

    from ishiki_host.eventloop import running_loop
    from ishiki_host.host.host import Host

    logging.getLogger("ishiki_host.cli").info("event loop: %s", running_loop())
    host = Host(root, config=config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_signals, host)
        try:
            async with host:
                await host.wait_stop_requested()
        except Exception:
            logging.getLogger("ishiki_host.cli").exception("the host failed")
            tg.cancel_scope.cancel()
            return 1
        tg.cancel_scope.cancel()
    return 0


async def _signals(host: Host) -> None:
    import anyio

    log = logging.getLogger("ishiki_host.cli")
    stops = 0
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as received:
        async for signum in received:
            if signum == signal.SIGHUP:
                log.info("SIGHUP: reloading the config")
                await _reload(host)
                continue
            stops += 1
            if stops > 1:
                log.warning("%s again: exiting at once", signal.Signals(signum).name)
                logging.shutdown()
                os._exit(130)
            host.request_stop(signal.Signals(signum).name)


async def _reload(host: Host) -> None:
    try:
        report = await host.reload()
    except Exception:
        logging.getLogger("ishiki_host.cli").exception("reload failed; the running config stays")
        return
    logging.getLogger("ishiki_host.cli").info("reloaded: %s", report)
