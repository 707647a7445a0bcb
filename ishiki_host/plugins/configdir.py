"""A whole config directory, loaded and gated: what ``ishiki check`` reports and what the host runs.

``load_config_dir`` discovers the installed services (unless given a registry), loads ``ishiki.yaml``,
``models.yaml`` and every ``profiles/<id>/`` in sorted order, and gates each profile. It raises only
``ConfigDirError``, when the directory is not a config directory at all; every other problem is data in the
returned ``ConfigDir``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ishiki_host.config.host import HOST_FILE, HostConfig, load_host_config
from ishiki_host.config.models import ModelsConfig
from ishiki_host.config.models_loader import MODELS_FILES, load_models
from ishiki_host.config.profile import ProfileLoad, load_profile
from ishiki_host.config.profile_types import Profile
from ishiki_host.errors import ConfigDirError, ConfigError
from ishiki_host.plugins.activation import ProfileState, activate
from ishiki_host.plugins.discovery import PluginRegistry, discover

__all__ = ["PROFILES_DIR", "ConfigDir", "load_config_dir", "profile_directories"]

PROFILES_DIR = "profiles"


@dataclass(frozen=True, slots=True)
class ConfigDir:
    """A loaded config directory: host settings, models, gated profiles and the services found."""

    root: Path
    host: HostConfig
    models: ModelsConfig
    profiles: tuple[ProfileState, ...]
    registry: PluginRegistry
    host_errors: tuple[ConfigError, ...] = ()
    models_errors: tuple[ConfigError, ...] = ()

    @property
    def ok(self) -> bool:
        """No host or models error, and every enabled profile ready."""
        ready = all(p.state in ("ready", "disabled") for p in self.profiles)
        return ready and not self.host_errors and not self.models_errors

    def profile(self, profile_id: str) -> ProfileState | None:
        """The state of one profile by id."""
        return next((p for p in self.profiles if p.id == profile_id), None)

    def ready(self) -> tuple[Profile, ...]:
        """The profiles that may run now."""
        return tuple(p.profile for p in self.profiles if p.state == "ready" and p.profile is not None)

    def as_dict(self) -> dict[str, Any]:
        """The one JSON object ``ishiki check --json`` prints."""
        return {
            "ok": self.ok,
            "profiles": [p.as_dict() for p in self.profiles],
            "models": {"errors": [e.as_dict() for e in self.models_errors]},
            "host": {"errors": [e.as_dict() for e in self.host_errors]},
            "plugins": {"errors": [_plugin_error(r.as_dict()) for r in self.registry.errors]},
        }


def _plugin_error(record: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("service", "distribution", "version")
    return {**{k: record[k] for k in keys}, "message": record["error"]}


def profile_directories(root: Path) -> list[Path]:
    """The profile directories of a config dir, sorted by name (hidden ones left out)."""
    profiles = root / PROFILES_DIR
    if not profiles.is_dir():
        return []
    return sorted((p for p in profiles.iterdir() if p.is_dir() and not p.name.startswith(".")), key=lambda p: p.name)


def check_usable(root: Path) -> None:
    """Raise ``ConfigDirError`` unless ``root`` looks like a config directory."""
    if not root.exists():
        raise ConfigDirError(f"{root}: no such directory", file=str(root))
    if not root.is_dir():
        raise ConfigDirError(f"{root}: not a directory", file=str(root))
    if (root / PROFILES_DIR).exists() and not (root / PROFILES_DIR).is_dir():
        raise ConfigDirError(f"{root / PROFILES_DIR}: not a directory", file=str(root / PROFILES_DIR))
    markers = (HOST_FILE, *MODELS_FILES, PROFILES_DIR)
    if not any((root / name).exists() for name in markers):
        raise ConfigDirError(
            f"{root} is not a config directory: it has no ishiki.yaml, models.yaml or profiles/ "
            "(`ishiki init DIR` writes one)",
            file=str(root),
        )


def load_config_dir(
    root: Path,
    *,
    env: Mapping[str, str] | None = None,
    registry: PluginRegistry | None = None,
) -> ConfigDir:
    """Load and gate the config directory ``root`` (paths in messages are shown relative to it as given)."""
    check_usable(root)
    registry = discover() if registry is None else registry
    host, host_errors = load_host_config(root, env, catalog=registry)
    models, models_errors = load_models(root, env, catalog=registry)
    loads: list[ProfileLoad] = []
    for directory in profile_directories(root):
        display = str(root / PROFILES_DIR / directory.name)
        loads.append(load_profile(directory, display, registry, models))
    states = activate(loads, registry, models, host.invalid_accounts)
    return ConfigDir(root, host, models, states, registry, tuple(host_errors), tuple(models_errors))
