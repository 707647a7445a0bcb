"""``ishiki new plugin KIND NAME [--dir DIR]`` and ``ishiki new profile ID [DIR]``: write a starting point.

``new plugin`` writes the package ``DIR/ishiki-<kind prefix>-<name>`` (DIR defaults to the current directory):
``pyproject.toml`` with the entry point, the plugin class with its config schema, a README and tests that pass
at once. ``new profile`` writes ``DIR/profiles/<id>/`` (DIR defaults to the current directory) with every key
of the profile schema commented. Exit status: 0 when written, 2 when refused (a bad name, a target that is
not empty) or the files cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["register", "run_plugin", "run_profile"]

_KINDS = ("context", "wakeup", "toolcall", "extension", "channel", "provider", "host")


def register(subparsers: Any) -> None:
    """Add the ``new`` command and its ``plugin`` and ``profile`` subcommands."""
    parser = subparsers.add_parser(
        "new",
        help="write a new plugin package or profile",
        description="Write a starting point: a plugin package whose tests pass at once, or a commented profile.",
    )
    parser.set_defaults(handler=lambda _args: _usage(parser))
    targets = parser.add_subparsers(dest="target", metavar="TARGET")
    plugin = targets.add_parser(
        "plugin",
        help="write a plugin package",
        description="Write the package ishiki-<kind>-<name> (extensions: ishiki-ext-<name>): pyproject.toml with "
        "the entry point, the plugin class with its config schema, a README and tests that pass at once.",
    )
    plugin.add_argument("kind", choices=_KINDS, metavar="KIND", help=f"one of: {', '.join(_KINDS)}")
    plugin.add_argument("name", metavar="NAME", help="the entry-point name people use in their config, e.g. weather")
    plugin.add_argument("--dir", default=".", metavar="DIR", help="where to create the package (default: .)")
    plugin.set_defaults(handler=run_plugin)
    profile = targets.add_parser(
        "profile",
        help="write a profile with every key commented",
        description="Write DIR/profiles/ID/profile.yml (every key of the schema, commented) and persona.md.",
    )
    profile.add_argument("id", metavar="ID", help="the profile's id (its directory name)")
    profile.add_argument("dir", nargs="?", default=".", metavar="DIR", help="the config directory (default: .)")
    profile.add_argument("--model", metavar="REF", help="a group or provider:modelId (default: from models.yaml)")
    profile.add_argument("--force", action="store_true", help="overwrite files that already exist")
    profile.set_defaults(handler=run_profile)


def run_plugin(args: argparse.Namespace) -> int:
    """Write the plugin package; return the exit status."""
    from ishiki_host.errors import ScaffoldError
    from ishiki_host.plugins.discovery import BUILTIN_DISTRIBUTION
    from ishiki_host.scaffold import plugin_names, write_plugin

    try:
        names = plugin_names(args.kind, args.name)
        owner = _owner(names.service)
        if owner == BUILTIN_DISTRIBUTION:
            raise ScaffoldError(f"{names.service} is a built-in service of {owner}: choose another name")
        root = write_plugin(args.kind, args.name, Path(args.dir))
    except ScaffoldError as exc:
        print(f"ishiki new plugin: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {root}: {names.service} ({names.target})")
    if owner is not None and owner != names.distribution:
        print(f"note: {owner} already registers {names.service}; installed together, neither loads", file=sys.stderr)
    print(f"next: cd {root} && pip install -e '.[test]' && pytest")
    return 0


def run_profile(args: argparse.Namespace) -> int:
    """Write the profile; return the exit status."""
    from ishiki_host.config.models_loader import MODELS_FILES
    from ishiki_host.errors import ScaffoldError
    from ishiki_host.scaffold import write_profile

    try:
        directory = write_profile(Path(args.dir), args.id, model=args.model, force=args.force)
    except ScaffoldError as exc:
        print(f"ishiki new profile: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {directory}: profile.yml, persona.md")
    if not any((Path(args.dir) / name).exists() for name in MODELS_FILES):
        print(f"note: {args.dir} has no models.yaml for the profile's model (`ishiki init {args.dir}` writes one)")
    print(f"next: edit them, then `ishiki check {args.dir}`")
    return 0


def _owner(service: str) -> str | None:
    """The distribution that already registers ``service`` here (two owners of one name both fail to load)."""
    from ishiki_host.plugins.discovery import discover

    record = discover([service.rpartition(".")[0]]).record(service)
    return None if record is None else record.distribution or "an unknown distribution"


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2
