"""``PluginContext``: the ``RuntimeContext`` a runtime hands its engines and extensions.

It is a separate object, not the runtime itself, so that a plugin holds exactly the contract and nothing of
the runtime's machinery: no tool surface to rewrite, no trust to change, no switch to flip. A member an
older host offered on the runtime fails with an ``AttributeError`` that names what replaces it (mypy flags it
too, for authors who type-check against ``RuntimeContext``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, NoReturn

from ishiki_host.runtime.scheduled import TRUST_CEILING, ceiling_of, running_level

if TYPE_CHECKING:
    import logging
    import random
    from pathlib import Path

    from ishiki_host.addresses.ids import Target
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.agent import Agent
    from ishiki_host.core.bus import EventBus
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.model import LanguageModel, Priority
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.core.turns import TurnHandle
    from ishiki_host.jsontypes import Json
    from ishiki_host.plugins.runtime_api import TurnView
    from ishiki_host.plugins.services import HostServices
    from ishiki_host.resources import ResourceCenter
    from ishiki_host.runtime.notices import Notices
    from ishiki_host.runtime.parts import ProfileParts, SharedParts
    from ishiki_host.runtime.started import Started
    from ishiki_host.sessions.manager import Sessions

__all__ = ["REPLACED", "PluginContext"]

REPLACED: Mapping[str, str] = {
    "gate": "send the host's one-line notices with runtime.notice(text)",
    "seed_pending": "a compaction with keep_from counts the messages it carries for the next turn by itself",
    "surface": "extensions offer tools with ishiki_tools; the tool surface of a turn is the host's",
    "extensions": "extensions reach each other through runtime.services (setdefault with a ServiceKey)",
    "disclosure": "codemode and toolsearch are the profile's (its codemode and toolsearch sections)",
    "turns": "read the running turn with runtime.turn_state",
    "lifecycle": "run background work with runtime.spawn(fn, name=...)",
    "host": "use runtime.services (HostServices) for what the host shares",
    "parts": "use runtime.profile, runtime.model and runtime.context_window",
    "outbox": "send with the kernel's send_message tool; the host speaks with runtime.notice(text)",
    "admit_joined": "the host counts messages that join a turn by itself",
    "default_target": "runtime.turn_state.latest_target() (cross mode), or runtime.sid and runtime.channel_id",
}
"""Members older hosts offered plugins on the runtime itself, and what to use instead."""


class PluginContext:
    """The ``RuntimeContext`` of one runtime (see the module docstring), made by the runtime from its parts:
    ``started`` gives what exists once it started (``AgentStopped`` before), ``turn`` the running turn."""

    __slots__ = (
        "_bus",
        "_home",
        "_key",
        "_logger",
        "_notices",
        "_parts",
        "_rng",
        "_shared",
        "_spawn",
        "_started",
        "_turn",
    )

    def __init__(
        self,
        key: RuntimeKey,
        parts: ProfileParts,
        shared: SharedParts,
        *,
        home: Path,
        bus: EventBus,
        logger: logging.Logger,
        rng: random.Random,
        started: Callable[[], Started],
        turn: Callable[[], TurnView],
        spawn: Callable[[Callable[[], Awaitable[object]], str], None],
        notices: Notices,
    ):
        self._key = key
        self._parts = parts
        self._shared = shared
        self._home = home
        self._bus = bus
        self._logger = logger
        self._rng = rng
        self._started = started
        self._turn = turn
        self._spawn = spawn
        self._notices = notices

    @property
    def key(self) -> RuntimeKey:
        """``profile/sid/channel``, or ``profile/main`` in cross mode."""
        return self._key

    @property
    def profile(self) -> Profile:
        """The profile this runtime serves."""
        return self._parts.profile

    @property
    def sid(self) -> str | None:
        """``platform:selfId`` of the runtime's channel (``None`` in cross mode)."""
        return self._key.sid

    @property
    def channel_id(self) -> str | None:
        """The runtime's channel (``None`` in cross mode)."""
        return self._key.channel_id

    @property
    def home(self) -> Path:
        """The runtime's data directory."""
        return self._home

    @property
    def config_dir(self) -> Path:
        """The config directory of the host."""
        return self._shared.config_dir

    @property
    def data_dir(self) -> Path:
        """The host's data directory."""
        return self._shared.data_dir

    @property
    def clock(self) -> Clock:
        """The host's clock."""
        return self._shared.clock

    @property
    def rng(self) -> random.Random:
        """Seeded from the host seed and the key when the host has a seed."""
        return self._rng

    @property
    def logger(self) -> logging.Logger:
        """``ishiki_host.runtime.<key>``."""
        return self._logger

    @property
    def log(self) -> FactLogProtocol:
        """The fact log (open while the runtime runs)."""
        return self._started().log

    @property
    def bus(self) -> EventBus:
        """The runtime's event bus."""
        return self._bus

    @property
    def agent(self) -> Agent:
        """The agent (exists once the engines are created; runs while the runtime does)."""
        return self._started().agent

    @property
    def resources(self) -> ResourceCenter:
        """The runtime's resource center."""
        return self._started().resources.center

    @property
    def model(self) -> LanguageModel:
        """The profile's shared underlying model."""
        return self._parts.model

    @property
    def turn_state(self) -> TurnView:
        """The running turn (read-only)."""
        return self._turn()

    @property
    def context_window(self) -> int:
        """The smallest context window among the profile model's members."""
        return self._parts.context_window

    @property
    def services(self) -> HostServices:
        """What the host shares with every runtime."""
        return self._shared.services

    @property
    def sessions(self) -> Sessions:
        """The runtime's sessions."""
        return self._started().sessions

    def models(self, ref: str) -> LanguageModel:
        """Another model of ``models.yaml`` (a group or ``provider:modelId``)."""
        return self._shared.models(ref)

    def spawn(self, fn: Callable[[], Awaitable[object]], *, name: str) -> None:
        """Run ``fn()`` in the runtime's task group, off the path of turns; a failure is logged with ``name``."""
        self._spawn(fn, name)

    async def wake(
        self,
        prompt: str | None = None,
        *,
        priority: Priority = "interactive",
        info: Mapping[str, Json] | None = None,
        trust: TrustLevel | None = None,
    ) -> TurnHandle:
        """Queue a turn with ``prompt`` (missing or blank: "Continue."); ``info`` goes into its trigger, with
        the ceiling of its level (``trust``, the level of the turn whose work calls this; the lowest wins)."""
        text = prompt if prompt is not None and prompt.strip() else "Continue."
        trigger = dict(info or {})
        limit = ceiling_of([trigger, {TRUST_CEILING: trust}, {TRUST_CEILING: running_level()}])
        if limit is not None:
            trigger[TRUST_CEILING] = limit
        return await self.agent.continue_(text, priority=priority, reason="wake", info=trigger)

    async def notice(self, text: str, target: Target | None = None) -> bool:
        """One line from the host to ``target`` (default: where the persona replies); whether it went out."""
        return await self._notices.notice(text, target)

    def __getattr__(self, name: str) -> NoReturn:
        replacement = REPLACED.get(name)
        if replacement is not None:
            raise AttributeError(f"RuntimeContext offers no {name!r} (any more): {replacement}")
        raise AttributeError(f"RuntimeContext has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"<RuntimeContext {self._key}>"
