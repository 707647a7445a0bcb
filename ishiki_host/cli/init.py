"""``ishiki init [DIR]``: write a config directory that passes ``ishiki check`` at once.

Without a terminal (stdin or stdout not a TTY) it writes the template of ``ishiki_host.cli._templates`` and
never overwrites a file unless ``--force`` is given. On a terminal it asks first (``ishiki_host.cli._onboard``:
which model server, which channels), asks again before overwriting a file that exists (unless ``--force``),
writes the files, runs the check of ``ishiki check`` on them and prints its report and the next command.
Exit status: 0 when written, 2 when it would overwrite something, cannot write, or the questions were left.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["register", "run"]

_PROFILE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def register(subparsers: Any) -> None:
    """Add the ``init`` command."""
    parser = subparsers.add_parser(
        "init",
        help="write a new config directory",
        description="Write ishiki.yaml, models.yaml and one profile, with comments that teach each key. On a "
        "terminal it asks which model server and channels first, then runs the check.",
    )
    parser.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="the directory to write (created when missing; default: .)"
    )
    parser.add_argument("--profile", default="assistant", metavar="ID", help="the profile's id (default: assistant)")
    parser.add_argument("--force", action="store_true", help="overwrite files that already exist")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the files; return the exit status."""
    from ishiki_host.cli._templates import files

    if not _PROFILE_ID.match(args.profile):
        print(f"ishiki init: bad profile id {args.profile!r} (letters, digits, '.', '_', '-')", file=sys.stderr)
        return 2
    root = Path(args.dir)
    if root.exists() and not root.is_dir():
        print(f"ishiki init: {root} exists and is not a directory", file=sys.stderr)
        return 2
    if sys.stdin.isatty() and sys.stdout.isatty():
        return _interactive(args, root)
    content = files(args.profile)
    existing = [name for name in content if (root / name).exists()]
    if existing and not args.force:
        print(f"ishiki init: would overwrite {', '.join(existing)} in {root} (use --force)", file=sys.stderr)
        return 2
    if not _write(root, content):
        return 2
    print(f"wrote {root}: {', '.join(content)}")
    print(f"next: edit models.yaml to point at your model, then `ishiki check {root}`")
    return 0


def _write(root: Path, content: dict[str, str]) -> bool:
    """Write every file of ``content`` under ``root``; say why on stderr and return ``False`` when one fails."""
    try:
        for name, text in content.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"ishiki init: cannot write in {root}: {exc.strerror or exc}", file=sys.stderr)
        return False
    return True


def _interactive(args: argparse.Namespace, root: Path) -> int:
    """Ask, write, check (see the module docstring)."""
    import os

    from ishiki_host.cli._onboard import Asker, Stop, ask_channels, ask_model
    from ishiki_host.cli._templates import chosen_files
    from ishiki_host.config.services import CHANNEL_GROUP, HOST_GROUP
    from ishiki_host.plugins.discovery import discover

    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing for input(), where the platform has it)

    ask = Asker()
    registry = discover()
    environ = dict(os.environ)
    print(f"ishiki init: a config directory in {root} (Enter takes the [default]; Ctrl-D stops, nothing written)")
    try:
        model = ask_model(ask, environ)
        installed = registry.names(CHANNEL_GROUP)
        channels = ask_channels(ask, installed, environ, dashboard="dashboard" in registry.names(HOST_GROUP))
        content = chosen_files(args.profile, model, channels)
        existing = [name for name in content if (root / name).exists()]
        if existing and not args.force and not ask.yes(f"overwrite {', '.join(existing)} in {root}?", False):
            print("ishiki init: nothing written", file=sys.stderr)
            return 2
    except Stop:
        print("\nishiki init: stopped, nothing written", file=sys.stderr)
        return 2
    if not _write(root, content):
        return 2
    print(f"wrote {root}: {', '.join(content)}")
    _check(root, content)
    return 0


def _check(root: Path, content: dict[str, str]) -> None:
    """Print the report of ``ishiki check`` on what was written, and what to do next."""
    import os

    from ishiki_host.cli.check import report
    from ishiki_host.cli.doctor.config import load_checked

    checked = load_checked(root)
    print(f"\n$ ishiki check {root}")
    print("\n".join(report(checked.config, checked.found)))
    values = [line.split("#", 1)[0] for text in content.values() for line in text.splitlines()]  # not comments
    named = sorted({m for line in values for m in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", line)})
    unset = [v for v in named if not os.environ.get(v)]
    if unset:
        print(f"\nnext: set {', '.join(unset)} (`export {unset[0]}=...`), then `ishiki doctor {root}`")
    elif checked.ok:
        print(f"\nnext: `ishiki doctor {root}`, then `ishiki run {root}`")
    else:
        print(f"\nnext: fix what the check says, then `ishiki doctor {root}`")
