"""``ishiki memory clear [DIR] [--yes]``: delete the memory database of a config directory.

The data directory is ``data/`` under DIR unless ``ishiki.yaml`` sets ``data_dir`` (relative to DIR). The
command asks before deleting (``--yes`` skips the question), refuses while a running host has the database
open, and deletes ``memory.db-wal`` and ``memory.db-shm`` before ``memory.db`` so an interrupted run never
leaves a WAL beside a newer database.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ishiki_host.config.yamlio import load_yaml
from ishiki_host.errors import ConfigError, HostConfigInvalid, IshikiError
from ishiki_host.store.db import database_in_use, memory_db_files, memory_db_path

__all__ = ["data_dir_of", "register"]

HOST_CONFIG = "ishiki.yaml"


def register(subparsers: Any) -> None:
    """Add ``memory`` and its ``clear`` action to the ``ishiki`` parser."""
    parser = subparsers.add_parser(
        "memory", help="manage the memory database", description="Manage the memory database (data/memory.db)."
    )
    actions = parser.add_subparsers(dest="memory_action", metavar="ACTION")
    clear = actions.add_parser("clear", help="delete the memory database (memory.db, -wal, -shm)")
    clear.add_argument("dir", nargs="?", default=".", metavar="DIR", help="config directory (default: .)")
    clear.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    clear.set_defaults(memory_handler=_clear)
    parser.set_defaults(handler=lambda args: _run(parser, args))


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    handler = getattr(args, "memory_handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    code: int = handler(args)
    return code


def _clear(args: argparse.Namespace) -> int:
    try:
        db = memory_db_path(data_dir_of(Path(args.dir)))
    except IshikiError as exc:
        return _fail(str(exc), 2)
    present = [path for path in reversed(memory_db_files(db)) if path.exists()]
    if not present:
        print(f"No memory database at {db}; nothing to delete.")
        return 0
    if not args.yes and not _confirm(present):
        print("Nothing deleted.")
        return 1
    if database_in_use(db):
        return _fail(f"{db} is in use by a running host; stop it first (nothing deleted)", 1)
    for path in present:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            return _fail(f"cannot delete {path}: {exc}", 1)
        print(f"Deleted {path}")
    return 0


def _confirm(paths: list[Path]) -> bool:
    print("This deletes every long-term memory, session, learned-skill state, beat and plugin setting in:")
    for path in paths:
        print(f"  {path} ({path.stat().st_size} bytes)")
    print("Delete? [y/N] ", end="", flush=True)
    answer = sys.stdin.readline()
    if not sys.stdin.isatty():
        print()  # a piped answer is not echoed; end the prompt's line

    return answer.strip().lower() in {"y", "yes"}


def _fail(message: str, code: int) -> int:
    print(f"ishiki: error: {message}", file=sys.stderr)
    return code


def data_dir_of(config_dir: Path) -> Path:
    """The data directory of a config directory (``data_dir`` in ishiki.yaml, default ``data``).

    ``ishiki.yaml`` is read by the hardened loader (size, encoding, nesting and alias limits), so a hostile
    file is a ``HostConfigInvalid`` naming it, never a traceback.
    """
    if not config_dir.is_dir():
        raise ConfigError("not a directory", file=str(config_dir))
    path = config_dir / HOST_CONFIG
    if not path.exists():
        return config_dir / "data"
    doc = load_yaml(path, str(path), HostConfigInvalid)
    if doc.data is None:
        return config_dir / "data"
    if not isinstance(doc.data, dict):
        raise HostConfigInvalid("must be a mapping of settings", file=str(path), line=1)
    value = doc.data.get("data_dir", "data")
    if not isinstance(value, str) or not value.strip():
        raise HostConfigInvalid(
            f"must be a directory path, got {value!r}", file=str(path), line=doc.line(("data_dir",)), path="data_dir"
        )
    return config_dir / Path(value).expanduser()
