"""Heartbeats on a running host: the one ``HeartbeatService``, its runner, and target checks on the routes.

``start_heartbeats`` runs after the profiles are active and the channels started (a beat a restart made late
may run at once, and should find its channel up). It needs the memory store (``services.memory``) and an
installed ``ishiki.ext.heartbeat``; it shares the service under ``HEARTBEATS`` for the extension, and its
one-time reminder beats under ``REMINDERS`` (``heartbeat.reminders.BeatReminders``) for the memory extension
and any other plugin.

- **Targets** (``RouteTargets``): the route table is asked which active profile claims the target's chat;
  it must be the profile the target names, with heartbeats on (``heartbeat.targets.target_refusal``).
- **Beats without a target** run as the persona that made them (its model, its persona as the system
  prompt); a beat from ``heartbeats.json`` (or whose maker is no longer active) runs on ``heartbeat.model`` of
  ``ishiki.yaml``; with neither, its run fails and says so.
- **Seeded**: the clean-up beat ``__clear_images__`` of ``attachments.retention`` (unless ``heartbeats.json``
  defines it), which deletes old captured attachments.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ishiki_host.config.services import EXTENSION_GROUP, service_name
from ishiki_host.errors import BeatRunFailed
from ishiki_host.heartbeat.janitor import clear_images_beat
from ishiki_host.heartbeat.reminders import BeatReminders
from ishiki_host.heartbeat.runner import RuntimeBeatRunner
from ishiki_host.heartbeat.service import HEARTBEATS, HeartbeatService
from ishiki_host.heartbeat.targets import HEARTBEAT_EXTENSION, target_refusal
from ishiki_host.host.runtimes import HostRuntimes
from ishiki_host.plugins.reminders import REMINDERS

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from ishiki_host.core.model import LanguageModel
    from ishiki_host.heartbeat.scheduler import BeatRunner
    from ishiki_host.host.host import Host
    from ishiki_host.store.repos.beat_types import Beat, BeatTarget

__all__ = ["RouteRuntimes", "RouteTargets", "start_heartbeats"]

logger = logging.getLogger("ishiki_host.host")


class RouteTargets:
    """The host's ``TargetValidator``: the active profile named by a target must claim its chat."""

    def __init__(self, host: Host):
        self._host = host

    def __call__(self, target: BeatTarget) -> str | None:
        """``None`` when the target is fine, else why not."""
        route = self._host.routes.lookup(target.sid, target.channel)
        config = self._host.config
        known = (p.id for p in config.profiles)
        return target_refusal(target, route.profile if route else None, config.profile(target.profile), known)


class RouteRuntimes(HostRuntimes):
    """What the beat runner needs of the host (``heartbeat.runner.BeatRuntimes``): its runtimes, and the model
    of a beat without a target."""

    def background_model(self, beat: Beat) -> tuple[LanguageModel, str | None]:
        """The maker's model and persona, else ``heartbeat.model`` (see the module docstring)."""
        maker = (beat.created_by or "").partition("/")[0]
        route = self._host.routes.get(maker) if maker else None
        if route is not None:
            return route.parts.model, route.profile.persona
        ref = self._host.config.host.heartbeat.model
        if ref:
            return self._host.shared_parts.models(ref), None
        who = f"profile {maker!r}, which made it, is not running and " if maker else ""
        raise BeatRunFailed(f"the beat has no target, {who}ishiki.yaml sets no heartbeat.model to run it on")


async def start_heartbeats(host: Host, tg: TaskGroup, runner: BeatRunner | None = None) -> HeartbeatService | None:
    """Start the host's heartbeat service in ``tg``; ``None`` when heartbeats cannot run (logged). ``runner``
    runs each beat (a supervisor's runs it on the worker that owns the target); by default, on this host's
    runtimes (``RuntimeBeatRunner``)."""
    config = host.config
    if config.registry.plugin(service_name(EXTENSION_GROUP, HEARTBEAT_EXTENSION)) is None:
        logger.info("heartbeats are off: ishiki.ext.heartbeat is not installed")
        return None
    store = host.services.memory
    if store is None:
        logger.warning("heartbeats are off: the memory database is not open")
        return None
    service = HeartbeatService(
        store,
        runner or RuntimeBeatRunner(RouteRuntimes(host)),
        config_dir=host.root,
        data_dir=config.host.data_dir,
        default_tz=config.host.timezone,
        clock=host.clock,
        target_validator=RouteTargets(host),
        catch_up_seconds=config.host.heartbeat.catch_up_seconds,
        seeded=clear_images_beat(config.host.attachments.retention),
        slots=host.fleet,  # a fleet's hosts run each slot once between them
    )
    host.services.put(HEARTBEATS, service)
    host.services.put(REMINDERS, BeatReminders(service))
    await tg.start(service.serve)
    return service
