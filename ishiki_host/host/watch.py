"""What hot reload watches: a snapshot of the config directory's files, compared between polls.

The snapshot holds the modification time and size of ``ishiki.yaml``, ``models.yaml``, every other YAML file
at the top of the config dir (scripted rules files live there), the list of profile directories and each
one's ``profile.yml``/``profile.yaml`` and ``persona.md``. While some profile waits for a plugin, the
directories of ``sys.path`` are watched too: installing a distribution adds its metadata directory there.
Taking a snapshot only stats files; it runs in a worker thread.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ishiki_host.config.profile import PERSONA_FILE, PROFILE_FILES

__all__ = ["Snapshot", "snapshot", "watch"]

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock

logger = logging.getLogger(__name__)

Snapshot = dict[str, tuple[int, int] | tuple[str, ...] | None]


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def snapshot(root: Path, *, include_site: bool = False) -> Snapshot:
    """The watched state of ``root`` (see the module docstring)."""
    state: Snapshot = {}
    try:
        top = sorted(p for p in root.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    except OSError:
        top = []
    for path in top:
        state[str(path)] = _stat(path)
    profiles = root / "profiles"
    try:
        directories = sorted(p for p in profiles.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        directories = []
    state[str(profiles)] = tuple(p.name for p in directories)
    for directory in directories:
        for name in (*PROFILE_FILES, PERSONA_FILE):
            state[str(directory / name)] = _stat(directory / name)
    if include_site:
        for entry in sys.path:
            if entry and os.path.isdir(entry):
                state[f"site:{entry}"] = _stat(Path(entry))
    return state


async def watch(
    clock: Clock,
    interval: float,
    take: Callable[[], Awaitable[Snapshot]],
    reload: Callable[[], Awaitable[Any]],
    last: Snapshot,
    tick: Callable[[], Awaitable[Any]] | None = None,
) -> None:
    """Every ``interval`` seconds, ``take`` a snapshot; when it differs from the last one, ``reload``.

    ``tick`` runs on every round after that, for files with watchers of their own (``heartbeats.json``).
    """
    while True:
        await clock.sleep(interval)
        current = await take()
        if current != last:
            last = current
            try:
                await reload()
            except Exception:
                logger.exception("reloading the config failed; the running config stays")
        if tick is not None:
            try:
                await tick()
            except Exception:
                logger.exception("a reload tick failed")
