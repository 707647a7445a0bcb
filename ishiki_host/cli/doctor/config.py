"""The first check of ``ishiki doctor``: the config directory loads, as ``ishiki check`` sees it, summarised.

One finding per problem (a profile that is not ready, an error of a file, a plugin that failed to load), at
most ``SHOWN`` of them, then one line counting the rest; ``ishiki check`` lists them all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ishiki_host.channels.base import Finding, FindingLevel
from ishiki_host.cli.check import Found
from ishiki_host.errors import ConfigError
from ishiki_host.heartbeat.check import check_beat_file
from ishiki_host.memory.skills import scan_skills
from ishiki_host.plugins.checks import plugin_checks
from ishiki_host.plugins.configdir import ConfigDir, load_config_dir

__all__ = ["SHOWN", "Checked", "config_findings", "load_checked"]

SHOWN = 8
"""The most problems listed one by one; the rest are counted (``ishiki check`` has the whole list)."""


@dataclass(frozen=True, slots=True)
class Checked:
    """A config directory as ``ishiki check`` reads it: the loaded directory and the other files it checks."""

    config: ConfigDir
    found: Found

    @property
    def ok(self) -> bool:
        """What ``ishiki check`` exits 0 on: no error anywhere and every enabled profile ready."""
        return self.config.ok and self.found.ok


def load_checked(root: Path) -> Checked:
    """Load ``root`` and everything ``ishiki check`` reads beside it (``ConfigDirError`` when it is no config
    directory)."""
    config = load_config_dir(root)
    found = Found(check_beat_file(config, now=time.time()), scan_skills(config.root), plugin_checks(config))
    return Checked(config, found)


def config_findings(checked: Checked, root: Path) -> list[Finding]:
    """The summary finding, then one finding per problem (see the module docstring)."""
    config = checked.config
    enabled = [p for p in config.profiles if p.state != "disabled"]
    ready = sum(1 for p in enabled if p.state == "ready")
    problems = _profile_problems(config, root) + _file_problems(checked, root)
    broken = [
        Finding(
            "warning",
            f"plugin {r.full_name}",
            f"failed to load: {r.error}",
            f"reinstall or uninstall {r.distribution or 'its package'} (`ishiki plugins` shows every service)",
        )
        for r in config.registry.errors
    ]
    profiles = f"{ready} of {len(enabled)} enabled profile{'s' if len(enabled) != 1 else ''} ready"
    if not enabled:
        head = Finding("error", "config", "no enabled profile", f"add one: `ishiki new profile ID {root}`")
    elif checked.ok:
        head = Finding("ok", "config", f"{profiles}, no file has an error")
    else:
        count = sum(1 for f in problems if f.level == "error")
        head = Finding(
            "error",
            "config",
            f"{profiles}, {count} problem{'s' if count != 1 else ''}",
            f"`ishiki check {root}` lists every one",
        )
    listed = [*problems, *broken]
    shown = listed[:SHOWN]
    if len(listed) > SHOWN:
        rest = listed[SHOWN:]
        level: FindingLevel = "error" if any(f.level == "error" for f in rest) else "warning"
        shown.append(Finding(level, "config", f"… and {len(rest)} more", f"`ishiki check {root}` lists them"))
    return [head, *shown]


def _profile_problems(config: ConfigDir, root: Path) -> list[Finding]:
    found: list[Finding] = []
    for state in config.profiles:
        what = f"profile {state.id}"
        if state.state == "invalid":
            first = state.errors[0].describe() if state.errors else "invalid"
            more = f" (and {len(state.errors) - 1} more)" if len(state.errors) > 1 else ""
            found.append(Finding("error", what, first + more, f"fix {state.file or state.directory}"))
        elif state.state == "waiting":
            missing = ", ".join(state.missing)
            fix = (
                "install the plugins it needs (`ishiki plugins` lists what is installed) or fix the accounts it "
                "claims in ishiki.yaml"
            )
            found.append(Finding("error", what, f"waiting for {missing}", fix))
        elif state.state == "skipped":
            found.append(Finding("warning", what, "skipped", f"`ishiki check {root}` says why"))
        if state.warnings:
            more = f" (and {len(state.warnings) - 1} more)" if len(state.warnings) > 1 else ""
            detail = state.warnings[0].describe() + more
            found.append(Finding("warning", what, detail, f"`ishiki check {root}` lists every warning"))
    return found


def _file_problems(checked: Checked, root: Path) -> list[Finding]:
    config, found = checked.config, checked.found
    groups: list[tuple[str, tuple[ConfigError, ...]]] = [
        ("ishiki.yaml", config.host_errors),
        ("models.yaml", (*config.models_errors, *found.plugins.models)),
        ("heartbeats.json", found.beats.errors),
        ("skills", found.skills.errors),
        ("extensions", found.plugins.extensions),
    ]
    return [
        Finding("error", what, error.describe(), f"edit {error.file or root / what}, then `ishiki check {root}`")
        for what, errors in groups
        for error in errors
    ]
