"""``ishiki check [DIR] [--json]``: validate a config directory and say which profiles can run.

Besides the profiles, it reads every other file the host would: ``heartbeats.json``, ``skills/*/SKILL.md``,
and the files plugins read themselves (the scripted model's rules, ``mcp.json``: ``ishiki_host.plugins.checks``).

Exit status: 0 when every enabled profile is ready and no file has an error, 1 otherwise, 2 when DIR is not a
usable config directory. Warnings (a key in its old camelCase spelling: ``ishiki_host.config.keys``) are
printed, prefixed ``warning:``, but never fail the check.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ishiki_host.errors import ConfigError
    from ishiki_host.heartbeat.check import BeatFileCheck
    from ishiki_host.memory.skills import SkillScan
    from ishiki_host.plugins.checks import PluginChecks
    from ishiki_host.plugins.configdir import ConfigDir

from ishiki_host.cli._args import add_dir_argument

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``check`` command."""
    parser = subparsers.add_parser(
        "check",
        help="validate a config directory",
        description="Validate ishiki.yaml, models.yaml, every profile, heartbeats.json, the skills and the files "
        "plugins read (scripted rules, mcp.json); report each profile's state. Exit 0 when every enabled profile is "
        "ready and no file has an error, 1 otherwise, 2 when DIR is not a config directory.",
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
    from ishiki_host.memory.skills import scan_skills
    from ishiki_host.plugins.checks import plugin_checks
    from ishiki_host.plugins.configdir import load_config_dir

    try:
        config = load_config_dir(Path(args.dir))
    except ConfigDirError as exc:
        if args.json:
            print_json({"ok": False, "error": exc.message})
        print(f"ishiki check: {exc.message}", file=sys.stderr)
        return 2
    found = Found(check_beat_file(config, now=time.time()), scan_skills(config.root), plugin_checks(config))
    ok = config.ok and found.ok
    if args.json:
        print_json({**config.as_dict(), **found.as_dict(config), "ok": ok})
    else:
        print("\n".join(report(config, found)))
    return 0 if ok else 1


@dataclass(frozen=True, slots=True)
class Found:
    """What ``check`` read beyond the profiles: ``heartbeats.json``, the skills, the files plugins read."""

    beats: BeatFileCheck
    skills: SkillScan
    plugins: PluginChecks

    @property
    def ok(self) -> bool:
        """No error in any of them."""
        return self.beats.ok and not self.skills.errors and not self.plugins.models and not self.plugins.extensions

    def as_dict(self, config: ConfigDir) -> dict[str, Any]:
        """The keys these add to ``ishiki check --json`` (``models.errors`` gains the model APIs' own)."""
        return {
            "models": {
                "errors": [e.as_dict() for e in (*config.models_errors, *self.plugins.models)],
                "warnings": [w.as_dict() for w in config.models.warnings],
            },
            "host": {
                "errors": [e.as_dict() for e in config.host_errors],
                "warnings": [w.as_dict() for w in config.host.warnings],
            },
            "heartbeats": self.beats.as_dict(),
            "skills": {"skills": len(self.skills.files), "errors": [e.as_dict() for e in self.skills.errors]},
            "extensions": {"errors": [e.as_dict() for e in self.plugins.extensions]},
        }


def report(config: ConfigDir, found: Found | None = None) -> list[str]:
    """The human-readable report (``heartbeats.json``, skills and plugin files only when ``found`` is given)."""
    from ishiki_host.cli._output import table

    lines = [
        f"profiles ({len(config.profiles)}):" if config.profiles else "profiles: none (add profiles/<id>/profile.yml)"
    ]
    for state in config.profiles:
        note = f"missing {', '.join(state.missing)}" if state.state == "waiting" else ""
        lines.extend(table([[state.id, state.state, note]], "  "))
        lines.extend(_errors(state.errors, "      "))
        lines.extend(_errors(state.warnings, "      warning: "))
    models_errors = (*config.models_errors, *(found.plugins.models if found else ()))
    lines.append(_section("models.yaml", models_errors))
    lines.extend(_errors(models_errors, "  "))
    lines.extend(_errors(config.models.warnings, "  warning: "))
    lines.append(_section("ishiki.yaml", config.host_errors))
    lines.extend(_errors(config.host_errors, "  "))
    lines.extend(_errors(config.host.warnings, "  warning: "))
    if found is not None:
        lines.extend(_found_lines(found))
    broken = config.registry.errors
    lines.append(f"plugins: {len(config.registry.records)} found" + (f", {len(broken)} failed" if broken else ""))
    lines.extend(f"  {r.as_error().message}" for r in broken)
    ready = sum(1 for p in config.profiles if p.state == "ready")
    enabled = sum(1 for p in config.profiles if p.state != "disabled")
    ok = config.ok and (found is None or found.ok)
    lines.append(f"{'ok' if ok else 'not ok'}: {ready} of {enabled} enabled profiles ready")
    return lines


def _found_lines(found: Found) -> list[str]:
    beats = found.beats
    lines = [
        _section("heartbeats.json", beats.errors)
        + (f" ({_count(beats.beats, 'beat')})" if beats.found else " (no file)")
    ]
    lines.extend(_errors(beats.errors, "  "))
    lines.append(_section("skills", found.skills.errors) + f" ({_count(len(found.skills.files), 'skill')})")
    lines.extend(_errors(found.skills.errors, "  "))
    lines.append(_section("extensions", found.plugins.extensions))
    lines.extend(_errors(found.plugins.extensions, "  "))
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _section(name: str, errors: tuple[ConfigError, ...]) -> str:
    return f"{name}: {len(errors)} error{'s' if len(errors) != 1 else ''}" if errors else f"{name}: ok"


def _errors(errors: tuple[ConfigError, ...], indent: str) -> list[str]:
    return [indent + e.describe() for e in errors]
