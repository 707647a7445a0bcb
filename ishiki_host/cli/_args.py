"""Argument handling shared by the CLI commands that act on a config directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_dir_argument", "timeout_seconds", "usable_dir", "worker_count"]


def add_dir_argument(parser: Any) -> None:
    """The optional ``DIR`` positional every config-directory command takes (default: the current one)."""
    parser.add_argument("dir", nargs="?", default=".", metavar="DIR", help="the config directory (default: .)")


def usable_dir(command: str, dir_arg: str) -> Path | None:
    """``dir_arg`` as a path when it is a config directory; else ``None``, the reason printed as ``ishiki COMMAND``.

    Callers exit with status 2 on ``None`` (the convention of every command: 2 = not a config directory).
    """
    from ishiki_host.errors import ConfigDirError
    from ishiki_host.plugins.configdir import check_usable

    root = Path(dir_arg)
    try:
        check_usable(root)
    except ConfigDirError as exc:
        print(f"ishiki {command}: {exc.message}", file=sys.stderr)
        return None
    return root


def timeout_seconds(text: str) -> float:
    """The ``--timeout S`` argument type: a finite number of seconds above 0 (``argparse`` prints the refusal)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--timeout is a number of seconds, not {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"--timeout is a number of seconds above 0, not {text!r}")
    return value


def worker_count(text: str) -> int | str:
    """The ``--workers N`` argument type: 1 to 64, or ``auto`` (``argparse`` prints the refusal)."""
    from ishiki_host.config.host import worker_count_problem

    value: int | str = text if text == "auto" else int(text) if text.strip().lstrip("-").isdigit() else text
    problem = worker_count_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"--workers: {problem}")
    return value
