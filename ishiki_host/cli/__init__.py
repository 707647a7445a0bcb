"""The ``ishiki`` command.

Each subcommand lives in its own module under ``ishiki_host.cli`` and exposes ``register(subparsers)``, which
adds its parser and sets ``handler`` (a function taking the parsed ``argparse.Namespace`` and returning the
exit code). ``main`` wires them together; nothing here imports the runtime until a command runs.

A reader that goes away early (``ishiki check DIR | head``) is no error of the command: whatever it still had
to print is dropped, without a traceback, and the exit status is 141 (128 + SIGPIPE, what a shell shows for a
program a closed pipe stopped; ``set -o pipefail`` scripts see it). Python ignores SIGPIPE, so the closed pipe
shows as ``BrokenPipeError`` on a write or on the last flush, both inside ``main``. Restoring SIGPIPE's default
instead would kill ``ishiki run`` mid-turn; its console treats a closed stdout as nobody listening and serves
on (141 at its exit only if what it could not write was still buffered then). Where a writer drops the error
itself (argparse's ``--help`` with ``PYTHONUNBUFFERED=1``), the command exits as usual.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from ishiki_host._version import __version__

__all__ = ["EPIPE_STATUS", "main"]

# The subcommand modules, in the order `ishiki --help` lists them.
COMMANDS: tuple[str, ...] = (
    "init", "new", "check", "doctor", "run", "reload", "status", "usage", "models", "plugins", "memory",
    "pairing", "service", "store",
)  # fmt: skip
EPIPE_STATUS = 141
"""The exit status when stdout (or stderr) was closed before all was written: 128 + SIGPIPE."""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = argparse.ArgumentParser(prog="ishiki", description="Run LLM personas in chat channels.")
    parser.add_argument("--version", action="version", version=f"ishiki-host {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"ishiki_host.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (see the module docstring for 141)."""
    try:
        try:
            return _dispatch(argv)
        finally:
            sys.stdout.flush()  # here, not in the interpreter's exit, where a closed pipe prints a traceback
    except BrokenPipeError:
        _drop_output()
        return EPIPE_STATUS


def _dispatch(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    code: int = handler(args)
    return code


def _drop_output() -> None:
    """Point stdout and stderr at /dev/null, so what is still buffered for the closed pipe goes nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a stream without a descriptor (a test's capture)
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
