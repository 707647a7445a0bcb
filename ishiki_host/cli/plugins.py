"""``ishiki plugins [--json]``: every installed service, where it comes from, and whether it loads.

Exit status: 0 when every service loads, 1 when one failed.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``plugins`` command."""
    parser = subparsers.add_parser(
        "plugins",
        help="list installed engines, extensions, channels, model APIs and host plugins",
        description="List every service of the Ishiki entry-point groups: full name, distribution, version, "
        "status and the error of those that failed to load. Exit 1 when one failed.",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """List the services; return the exit status."""
    from ishiki_host.cli._output import print_json, table
    from ishiki_host.plugins.discovery import discover

    registry = discover()
    if args.json:
        print_json({"services": [r.as_dict() for r in registry.records]})
    elif not registry.records:
        print("no services found (is ishiki-host installed?)")
    else:
        rows = [["SERVICE", "DISTRIBUTION", "VERSION", "STATUS"]]
        rows += [[r.full_name, r.distribution or "?", r.version or "?", r.status] for r in registry.records]
        print("\n".join(table(rows)))
        for record in registry.errors:
            print(f"\n{record.full_name} ({record.target}):\n  {record.error}")
    return 1 if registry.errors else 0
