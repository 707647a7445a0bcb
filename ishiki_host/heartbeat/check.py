"""What ``ishiki check`` says about ``heartbeats.json``: the errors the host would log when it syncs the file.

Every entry is checked as the host checks it (fields, cron, zone, one-time rule), and its target against the
config directory's ready profiles (``targets.ConfigTargets``). Beats without a target need a model to run on
(``heartbeat.model`` in ``ishiki.yaml``), which must name a model or group of ``models.yaml``. What only the
memory database knows (an id already taken by a beat made in a chat) is reported by the host at its sync.

The JSON shape, under ``heartbeats`` in ``ishiki check --json``:
``{"file", "found", "beats", "errors": [{"file", "line", "path", "message"}]}`` (``beats``: valid entries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host.errors import HeartbeatInvalid, HostConfigInvalid
from ishiki_host.heartbeat.beatfile import HEARTBEATS_FILE, parse_beat_file, read_beat_file_sync
from ishiki_host.heartbeat.rules import CLEAR_IMAGES_ID
from ishiki_host.heartbeat.targets import ConfigTargets

if TYPE_CHECKING:
    from ishiki_host.errors import ConfigError
    from ishiki_host.plugins.configdir import ConfigDir
    from ishiki_host.store.repos.beat_types import BeatSpec

__all__ = ["BeatFileCheck", "check_beat_file"]


@dataclass(frozen=True, slots=True)
class BeatFileCheck:
    """The verdict on ``heartbeats.json``: whether it exists, how many entries are valid, the errors."""

    file: str
    found: bool
    beats: int = 0
    errors: tuple[ConfigError, ...] = ()

    @property
    def ok(self) -> bool:
        """No error (a missing file is fine)."""
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        """The ``heartbeats`` object of ``ishiki check --json``."""
        return {
            "file": self.file,
            "found": self.found,
            "beats": self.beats,
            "errors": [e.as_dict() for e in self.errors],
        }


def check_beat_file(config: ConfigDir, *, now: float) -> BeatFileCheck:
    """Check ``heartbeats.json`` of ``config`` as the host would sync it at ``now``."""
    path = config.root / HEARTBEATS_FILE
    file = str(path)
    model_errors = _model_errors(config)
    try:
        text = read_beat_file_sync(path)
        if text is None:
            return BeatFileCheck(file, False, errors=tuple(model_errors))
        parsed = parse_beat_file(
            text, file=file, default_tz=config.host.timezone, now=now, target_validator=ConfigTargets(config)
        )
    except HeartbeatInvalid as exc:
        return BeatFileCheck(file, True, errors=(exc, *model_errors))
    unrunnable = [] if config.host.heartbeat.model else _without_model(parsed.specs, file)
    return BeatFileCheck(file, True, len(parsed.specs), (*parsed.errors, *unrunnable, *model_errors))


def _without_model(specs: tuple[BeatSpec, ...], file: str) -> list[ConfigError]:
    return [
        HeartbeatInvalid(
            f"beat {spec.id!r} has no target, and ishiki.yaml sets no heartbeat.model to run it on; its runs fail",
            file=file,
        )
        for spec in specs
        if spec.target is None and spec.id != CLEAR_IMAGES_ID
    ]


def _model_errors(config: ConfigDir) -> list[ConfigError]:
    ref = config.host.heartbeat.model
    if not ref or config.models.resolve(ref) is not None:
        return []
    message = f"heartbeat.model {ref!r} is not a group or provider:modelId of models.yaml"
    return [HostConfigInvalid(message, file=config.host.file, path="heartbeat.model")]
