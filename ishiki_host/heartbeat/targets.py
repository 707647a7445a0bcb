"""Whether a beat may speak at a target: the profile it names must be ready, claim the chat and run heartbeats.

One rule, two sources: the running host asks its route table (``runtime.host_heartbeats.RouteTargets``), and
``ishiki check`` asks the loaded config directory (``ConfigTargets``). Both answer like a ``TargetValidator``:
``None`` when the target is fine, else the reason, which the beat tools and ``heartbeats.json`` errors show.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.plugins.activation import ProfileState
    from ishiki_host.plugins.configdir import ConfigDir
    from ishiki_host.store.repos.beat_types import BeatTarget

__all__ = ["HEARTBEAT_EXTENSION", "ConfigTargets", "heartbeats_on", "target_refusal"]

HEARTBEAT_EXTENSION = "heartbeat"
"""The extension's name in ``extends``; a profile that turns it off is woken by no beat."""


def heartbeats_on(profile: Profile) -> bool:
    """Whether ``profile`` runs the heartbeat extension (on unless ``extends.heartbeat.enable: false``)."""
    return any(use.name == HEARTBEAT_EXTENSION for use in profile.extends)


def target_refusal(
    target: BeatTarget, claimed_by: Profile | None, state: ProfileState | None, known: Iterable[str] = ()
) -> str | None:
    """Why ``target`` is refused, or ``None``.

    ``claimed_by`` is the ready profile that claims the target's chat (if any), ``state`` the gated state of the
    profile the target names (``None``: no such profile), ``known`` the profile ids, for a "did you mean".
    """
    where = f"channel {target.channel} of {target.sid}"
    if claimed_by is not None and claimed_by.id == target.profile:
        if heartbeats_on(claimed_by):
            return None
        return f"profile {target.profile!r} turns heartbeats off (extends: {{heartbeat: {{enable: false}}}})"
    if state is None:
        close = difflib.get_close_matches(target.profile, list(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"there is no profile {target.profile!r}{hint}"
    if state.state == "waiting":
        return f"profile {target.profile!r} is waiting for {', '.join(state.missing) or 'a service'}"
    if state.state != "ready":
        return f"profile {target.profile!r} is {state.state}"
    if claimed_by is not None:
        return f"{where} belongs to profile {claimed_by.id!r}, not {target.profile!r}"
    return f"profile {target.profile!r} does not claim {where}"


class ConfigTargets:
    """``target_refusal`` against a loaded config directory (what ``ishiki check`` validates with)."""

    def __init__(self, config: ConfigDir):
        self._config = config
        self._ready = config.ready()

    def __call__(self, target: BeatTarget) -> str | None:
        """``None`` when a ready profile named by ``target`` claims its chat, else why not."""
        owner = next((p for p in self._ready if p.claims.matches(target.sid, target.channel)), None)
        state = self._config.profile(target.profile)
        return target_refusal(target, owner, state, (p.id for p in self._config.profiles))
