"""``ishiki init DIR``: write a config directory that passes ``ishiki check`` at once.

It never overwrites a file unless ``--force`` is given. Exit status: 0 when written, 2 when it would
overwrite something or cannot write.
"""

from __future__ import annotations

import argparse
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
        description="Write ishiki.yaml, models.yaml and one profile, with comments that teach each key.",
    )
    parser.add_argument("dir", metavar="DIR", help="the directory to write (created when missing)")
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
    content = files(args.profile)
    existing = [name for name in content if (root / name).exists()]
    if existing and not args.force:
        print(f"ishiki init: would overwrite {', '.join(existing)} in {root} (use --force)", file=sys.stderr)
        return 2
    try:
        for name, text in content.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"ishiki init: cannot write in {root}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {root}: {', '.join(content)}")
    print(f"next: edit models.yaml to point at your model, then `ishiki check {root}`")
    return 0
