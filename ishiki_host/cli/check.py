"""``ishiki check [DIR] [--json]``: validate a config directory and say which profiles can run.

Exit status: 0 when every enabled profile is ready (and ``ishiki.yaml``, ``models.yaml`` and
``heartbeats.json`` have no error), 1 otherwise, 2 when DIR is not a usable config directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ishiki_host.errors import ConfigError
    from ishiki_host.heartbeat.check import BeatFileCheck
    from ishiki_host.plugins.configdir import ConfigDir

from ishiki_host.cli._args import add_dir_argument

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``check`` command."""
    parser = subparsers.add_parser(
        "check",
        help="validate a config directory",
        description="Validate ishiki.yaml, models.yaml, heartbeats.json and every profile; report each profile's "
        "state. Exit 0 when every enabled profile is ready and no file has an error, 1 otherwise, 2 when DIR is not "
        "a config directory.",
    )
    add_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check ``args.dir``; print the report; return the exit status."""
    import time

    from ishiki_host.cli._output import print_json
    from ishiki_host.errors import ConfigDirError
    from ishiki_host.heartbeat.check import check_beat_file
    from ishiki_host.plugins.configdir import load_config_dir

    try:
        config = load_config_dir(Path(args.dir))
    except ConfigDirError as exc:
        if args.json:
            print_json({"ok": False, "error": exc.message})
        print(f"ishiki check: {exc.message}", file=sys.stderr)
        return 2
    beats = check_beat_file(config, now=time.time())
    ok = config.ok and beats.ok
    if args.json:
        print_json({**config.as_dict(), "ok": ok, "heartbeats": beats.as_dict()})
    else:
        print("\n".join(report(config, beats)))
    return 0 if ok else 1


def report(config: ConfigDir, beats: BeatFileCheck | None = None) -> list[str]:
    """The human-readable report (``heartbeats.json`` only when ``beats`` is given)."""
    from ishiki_host.cli._output import table

    lines = [
        f"profiles ({len(config.profiles)}):" if config.profiles else "profiles: none (add profiles/<id>/profile.yml)"
    ]
    for state in config.profiles:
        note = f"missing {', '.join(state.missing)}" if state.state == "waiting" else ""
        lines.extend(table([[state.id, state.state, note]], "  "))
        lines.extend(_errors(state.errors, "      "))
    lines.append(_section("models.yaml", config.models_errors))
    lines.extend(_errors(config.models_errors, "  "))
    lines.append(_section("ishiki.yaml", config.host_errors))
    lines.extend(_errors(config.host_errors, "  "))
    if beats is not None:
        found = f" ({beats.beats} beat{'s' if beats.beats != 1 else ''})" if beats.found else " (no file)"
        lines.append(_section("heartbeats.json", beats.errors) + found)
        lines.extend(_errors(beats.errors, "  "))
    broken = config.registry.errors
    lines.append(f"plugins: {len(config.registry.records)} found" + (f", {len(broken)} failed" if broken else ""))
    lines.extend(f"  {r.as_error().message}" for r in broken)
    ready = sum(1 for p in config.profiles if p.state == "ready")
    enabled = sum(1 for p in config.profiles if p.state != "disabled")
    ok = config.ok and (beats is None or beats.ok)
    lines.append(f"{'ok' if ok else 'not ok'}: {ready} of {enabled} enabled profiles ready")
    return lines


def _section(name: str, errors: tuple[ConfigError, ...]) -> str:
    return f"{name}: {len(errors)} error{'s' if len(errors) != 1 else ''}" if errors else f"{name}: ok"


def _errors(errors: tuple[ConfigError, ...], indent: str) -> list[str]:
    return [indent + e.describe() for e in errors]
