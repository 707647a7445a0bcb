"""``ishiki reload [DIR]``: make the host running DIR reload its config (as SIGHUP does).

The running host writes its pid to ``<data_dir>/ishiki.pid``. Exit status: 0 when the signal was sent, 1 when
no host runs for DIR, 2 when DIR is not a config directory.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from ishiki_host.cli._args import add_dir_argument, usable_dir

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``reload`` command."""
    parser = subparsers.add_parser(
        "reload",
        help="make a running host reload its config",
        description="Send SIGHUP to the host running DIR (found through <data_dir>/ishiki.pid): changed profiles "
        "restart, the others keep their conversations. Exit 1 when no host runs for DIR.",
    )
    add_dir_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Signal the host of ``args.dir``; return the exit status."""
    from ishiki_host.config.host import load_host_config
    from ishiki_host.host.host import PID_FILE

    root = usable_dir("reload", args.dir)
    if root is None:
        return 2
    host, _ = load_host_config(root)
    pid_file = host.data_dir / PID_FILE
    try:
        pid = int(pid_file.read_text(encoding="utf-8").strip())
        os.kill(pid, signal.SIGHUP)
    except (OSError, ValueError) as exc:
        reason = "no pid file" if isinstance(exc, FileNotFoundError) else str(exc)
        print(f"ishiki reload: no host is running for {root} ({pid_file}: {reason})", file=sys.stderr)
        return 1
    print(f"asked the host (pid {pid}) to reload {root}")
    return 0
