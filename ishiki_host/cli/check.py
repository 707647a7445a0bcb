"""``ishiki check [DIR] [--json]``: validate a config directory and say which profiles can run.

Exit status: 0 when every enabled profile is ready (and ``ishiki.yaml`` and ``models.yaml`` have no error),
1 otherwise, 2 when DIR is not a usable config directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ishiki_host.errors import ConfigError
    from ishiki_host.plugins.configdir import ConfigDir

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``check`` command."""
    parser = subparsers.add_parser(
        "check",
        help="validate a config directory",
        description="Validate ishiki.yaml, models.yaml and every profile; report each profile's state. "
        "Exit 0 when every enabled profile is ready, 1 when one is not, 2 when DIR is not a config directory.",
    )
    parser.add_argument("dir", nargs="?", default=".", metavar="DIR", help="the config directory (default: .)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check ``args.dir``; print the report; return the exit status."""
    from ishiki_host.cli._output import print_json
    from ishiki_host.errors import ConfigDirError
    from ishiki_host.plugins.configdir import load_config_dir

    try:
        config = load_config_dir(Path(args.dir))
    except ConfigDirError as exc:
        if args.json:
            print_json({"ok": False, "error": exc.message})
        print(f"ishiki check: {exc.message}", file=sys.stderr)
        return 2
    if args.json:
        print_json(config.as_dict())
    else:
        print("\n".join(report(config)))
    return 0 if config.ok else 1


def report(config: ConfigDir) -> list[str]:
    """The human-readable report."""
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
    broken = config.registry.errors
    lines.append(f"plugins: {len(config.registry.records)} found" + (f", {len(broken)} failed" if broken else ""))
    lines.extend(f"  {r.as_error().message}" for r in broken)
    ready = sum(1 for p in config.profiles if p.state == "ready")
    enabled = sum(1 for p in config.profiles if p.state != "disabled")
    lines.append(f"{'ok' if config.ok else 'not ok'}: {ready} of {enabled} enabled profiles ready")
    return lines


def _section(name: str, errors: tuple[ConfigError, ...]) -> str:
    return f"{name}: {len(errors)} error{'s' if len(errors) != 1 else ''}" if errors else f"{name}: ok"


def _errors(errors: tuple[ConfigError, ...], indent: str) -> list[str]:
    return [indent + e.describe() for e in errors]
