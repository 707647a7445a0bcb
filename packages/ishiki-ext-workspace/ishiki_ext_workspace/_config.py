"""The workspace's configuration: its JSON Schema (``extends.workspace.config``) and the settings built from it.

The root mount is always read-write and is named ``root``; extra mounts are read-only unless ``mode: rw``.
Relative paths are relative to the config directory and ``~`` is the user's home. Each mount is resolved once
(``realpath``) when the runtime starts, so a mount root that is a symlink serves the directory it named then,
whatever the link points at later. The root is created; a mount must already be a directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ishiki_host.errors import ProfileInvalid

__all__ = ["CONFIG_SCHEMA", "DEFAULT_MAX_FILE_BYTES", "ROOT_MOUNT", "Mount", "Settings", "settings_from_config"]

ROOT_MOUNT = "root"
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
_KEY = "extends.workspace.config"

CONFIG_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "root": {
            "type": "string",
            "minLength": 1,
            "description": "The read-write workspace directory, created if missing (mount 'root'). Relative to "
            "the config directory; default: the runtime's home + /workspace.",
        },
        "mounts": {
            "type": "array",
            "default": [],
            "description": "Extra directories, each addressed as workspace://<name>/<path>.",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "path"],
                "properties": {
                    "name": {
                        "type": "string",
                        "pattern": "^[a-z][a-z0-9_-]{0,31}$",
                        "description": "The mount's name (lowercase; 'root' is the workspace root's).",
                    },
                    "path": {"type": "string", "minLength": 1, "description": "An existing directory."},
                    "mode": {"enum": ["ro", "rw"], "default": "ro", "description": "ro: read-only; rw: read-write."},
                },
            },
        },
        "max_file_bytes": {
            "type": "integer",
            "minimum": 1,
            "default": DEFAULT_MAX_FILE_BYTES,
            "description": "The largest file read, edited, written or searched (bytes).",
        },
        "timeout_ms": {
            "type": "integer",
            "minimum": 1,
            "default": 30_000,
            "description": "Time limit of one search_files call and of one shell command (milliseconds).",
        },
        "shell": {
            "type": "boolean",
            "default": False,
            "description": "Offer the owner-only shell tool. Not a security boundary: see the package README.",
        },
        "max_output_bytes": {
            "type": "integer",
            "minimum": 256,
            "default": 64 * 1024,
            "description": "The most output a shell command, a listing or a search returns (bytes).",
        },
        "max_results": {
            "type": "integer",
            "minimum": 1,
            "default": 200,
            "description": "The most entries list_files and matches search_files return.",
        },
        "shell_env": {
            "type": "object",
            "default": {},
            "additionalProperties": {"type": "string"},
            "description": "Extra environment variables of shell commands (nothing of the host's is passed).",
        },
    },
}
"""The schema of ``extends.workspace.config``; its defaults are applied before ``create``."""


@dataclass(frozen=True, slots=True)
class Mount:
    """One directory of the workspace: its name, the path configured, its resolved path and its mode."""

    name: str
    path: str
    real: str
    writable: bool

    @property
    def mode(self) -> str:
        """``rw`` or ``ro``."""
        return "rw" if self.writable else "ro"

    @property
    def aliases(self) -> tuple[str, ...]:
        """Absolute spellings of the mount root a symlink inside it may use (resolved and as configured)."""
        return tuple(dict.fromkeys((self.real, self.path)))


@dataclass(frozen=True, slots=True)
class Settings:
    """The validated configuration of one runtime's workspace."""

    mounts: tuple[Mount, ...]
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    timeout_seconds: float = 30.0
    shell: bool = False
    max_output_bytes: int = 64 * 1024
    max_results: int = 200
    shell_env: Mapping[str, str] = field(default_factory=dict)

    @property
    def root(self) -> Mount:
        """The root mount."""
        return self.mounts[0]

    def mount(self, name: str) -> Mount | None:
        """The mount called ``name``, or ``None``."""
        return next((m for m in self.mounts if m.name == name), None)


def _absolute(raw: str, base: Path) -> str:
    path = Path(raw).expanduser()
    return os.path.abspath(path if path.is_absolute() else base / path)


def _directory(raw: str, base: Path, where: str, *, create: bool) -> tuple[str, str]:
    path = _absolute(raw, base)
    try:
        if create:
            os.makedirs(path, exist_ok=True)
        real = os.path.realpath(path, strict=True)
    except OSError as exc:
        raise ProfileInvalid(f"{raw!r} ({path}): {exc.strerror or exc}", path=where) from None
    if not os.path.isdir(real):
        raise ProfileInvalid(f"{raw!r} ({path}) is not a directory", path=where)
    return path, real


def _within(path: str, directory: str) -> bool:
    return os.path.commonpath((path, directory)) == directory


def _check_overlaps(mounts: Sequence[Mount], data_dir: str | None) -> None:
    for mount in mounts:
        if data_dir is not None and _within(data_dir, mount.real):
            raise ProfileInvalid(
                f"mount {mount.name!r} ({mount.real}) contains the host's data directory ({data_dir}): fact logs "
                "and memory.db of every conversation would be open to the model; mount a directory beside it",
                path=f"{_KEY}.root" if mount.name == ROOT_MOUNT else f"{_KEY}.mounts",
            )
        # A read-only mount inside a read-write one could be written through the latter: say so now.
        owner = next((m for m in mounts if m.writable and m is not mount and _within(mount.real, m.real)), None)
        if owner is not None and not mount.writable:
            raise ProfileInvalid(
                f"read-only mount {mount.name!r} ({mount.real}) lies inside read-write mount {owner.name!r} "
                f"({owner.real}), which would let it be written",
                path=f"{_KEY}.mounts",
            )


def _mounts(root: Mount, entries: Sequence[Mapping[str, Any]], base: Path) -> tuple[Mount, ...]:
    mounts = [root]
    for index, entry in enumerate(entries):
        where = f"{_KEY}.mounts[{index}]"
        name = entry["name"]
        if any(m.name == name for m in mounts):
            taken = "the workspace root's name" if name == ROOT_MOUNT else "already used by another mount"
            raise ProfileInvalid(f"mount name {name!r} is {taken}", path=f"{where}.name")
        path, real = _directory(entry["path"], base, f"{where}.path", create=False)
        mounts.append(Mount(name, path, real, entry.get("mode", "ro") == "rw"))
    return tuple(mounts)


def settings_from_config(
    config: Mapping[str, Any], *, home: Path, config_dir: Path, data_dir: Path | None = None
) -> Settings:
    """Build the settings of one runtime; ``ProfileInvalid`` names the key of a path that cannot be used.

    ``data_dir`` is the host's data directory: no mount may contain it (nor be it).
    """
    raw_root = config.get("root")
    root_path, root_real = _directory(raw_root or str(Path(home, "workspace")), config_dir, f"{_KEY}.root", create=True)
    root = Mount(ROOT_MOUNT, root_path, root_real, True)
    mounts = _mounts(root, config.get("mounts", ()), config_dir)
    _check_overlaps(mounts, os.path.realpath(data_dir) if data_dir is not None else None)
    return Settings(
        mounts=mounts,
        max_file_bytes=int(config.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)),
        timeout_seconds=int(config.get("timeout_ms", 30_000)) / 1000,
        shell=bool(config.get("shell", False)),
        max_output_bytes=int(config.get("max_output_bytes", 64 * 1024)),
        max_results=int(config.get("max_results", 200)),
        shell_env=dict(config.get("shell_env", {})),
    )
