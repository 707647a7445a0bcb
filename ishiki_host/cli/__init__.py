"""The ``ishiki`` command.

Each subcommand lives in its own module under ``ishiki_host.cli`` and exposes ``register(subparsers)``, which
adds its parser and sets ``handler`` (a function taking the parsed ``argparse.Namespace`` and returning the
exit code). ``main`` wires them together; nothing here imports the runtime until a command runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ishiki_host._version import __version__

__all__ = ["main"]

# The subcommand modules, in the order `ishiki --help` lists them.
COMMANDS: tuple[str, ...] = ("init", "new", "check", "run", "reload", "models", "plugins", "memory")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = argparse.ArgumentParser(prog="ishiki", description="Run LLM personas in chat channels.")
    parser.add_argument("--version", action="version", version=f"ishiki-host {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"ishiki_host.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    code: int = handler(args)
    return code
