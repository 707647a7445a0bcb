"""``AgentRuntime``: one persona at one address, and the ``RuntimeContext`` its plugins see.

A runtime owns its home directory (``data/runtimes/<key>/``), its fact log, event bus, resource center, the
instances of its profile's three engines and extensions, and the agent. Its owner (a profile route, or the
test harness) runs it in a task group::

    runtime = AgentRuntime(key, parts, services)
    await tg.start(runtime.run)        # opens the log, creates the instances, recovers, attaches: ready
    entry = await runtime.deliver(event)   # ingest only; the wakeup engine decides whether a turn runs
    await runtime.stop()               # finishes (or after the grace aborts) turns, stops and disposes

Everything a turn needs is assembled per turn (``setup_turn``): the trust level from the senders of the turn's
new messages, the extensions and tools switched on for the profile (``plugin_settings``), the tool surface
(``runtime.surface``), and the system prompt (``runtime.prompt``).

Every runtime has a command layer (``gate``: admission, slash commands, host notices; ``runtime.gate``) as its
first inbound filter, and a ``SessionManager`` (``sessions``: ``/clear``, ``/compact``, compactions); the
memory extension gives the sessions its store and summarizer settings.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.addresses.keys import RuntimeKey, runtime_dir
from ishiki_host.channels.inbound import capture_attachments, inbound_message
from ishiki_host.channels.repeats import RecentInbound
from ishiki_host.core.agent import Agent
from ishiki_host.core.bus import EventBus
from ishiki_host.core.turns import Turn, TurnHandle, TurnSetup
from ishiki_host.errors import AgentStopped
from ishiki_host.gateway.attribution import in_runtime
from ishiki_host.runtime.extensions import MountedExtensions
from ishiki_host.runtime.gate import CommandGate
from ishiki_host.runtime.hooks import RuntimeHooks
from ishiki_host.runtime.lifecycle import Lifecycle
from ishiki_host.runtime.policy import SWITCHES_STAGE, switches_stage
from ishiki_host.runtime.prompt import control_flow, join_sections
from ishiki_host.runtime.surface import SurfaceContext, default_surface
from ishiki_host.runtime.switches import enabled_extensions
from ishiki_host.runtime.tracker import TurnTracker
from ishiki_host.runtime.waiter import Waiter

if TYPE_CHECKING:
    from pathlib import Path

    from anyio.abc import TaskStatus

    from ishiki_host.addresses.ids import Target
    from ishiki_host.channels.base import InboundAttachment
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog import FactLog
    from ishiki_host.core.hooks import AgentHooks
    from ishiki_host.core.model import LanguageModel, Priority
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.resources import ArtifactStore, ResourceCenter
    from ishiki_host.runtime.disclosure import ToolDisclosure
    from ishiki_host.runtime.images import ImageResolver
    from ishiki_host.runtime.outbound import RuntimeOutbox
    from ishiki_host.runtime.parts import ProfileParts, SharedParts
    from ishiki_host.runtime.surface import ToolSurface
    from ishiki_host.runtime.turnstate import TurnState
    from ishiki_host.sessions.manager import SessionManager

__all__ = ["AgentRuntime", "InboundFilter"]

InboundFilter = Callable[["AgentRuntime", "IshikiEvent"], Awaitable[bool]]
"""Sees each event before it is ingested; returning ``True`` consumes it (the command layer's seam)."""

_LOGGER = logging.getLogger("ishiki_host.runtime")


def _runtime_logger(key: RuntimeKey) -> logging.Logger:
    # Not registered with logging's manager (which keeps every logger forever): it goes away with its runtime.
    logger = logging.Logger(f"ishiki_host.runtime.{key}")
    logger.parent = _LOGGER
    return logger


class AgentRuntime:
    """One runtime (see the module docstring); it implements ``RuntimeContext``."""

    def __init__(
        self,
        key: RuntimeKey,
        parts: ProfileParts,
        host: SharedParts,
        *,
        home: Path | None = None,
        extra_hooks: Sequence[AgentHooks] = (),
        extra_tools: Sequence[Tool] = (),
        kernel_tools: bool = True,
        surface: ToolSurface | None = None,
    ):
        self._key = key
        self._parts = parts
        self._host = host
        self._home = home if home is not None else runtime_dir(host.data_dir, key)
        self._bus = EventBus()
        self._logger = _runtime_logger(key)
        seed = None if host.seed is None else f"{host.seed}/{key}"
        self._rng = random.Random(seed)
        self.extensions = MountedExtensions(self, self._logger)
        self.waiter = Waiter(host.clock, self._wake_for_waiter)
        self.surface = surface or default_surface()
        if surface is None:
            self.surface.add(SWITCHES_STAGE, switches_stage(self), after="extensions")
        self.disclosure: ToolDisclosure | None = None  # codemode / toolsearch, when the profile turns them on
        if parts.profile.codemode is not None or parts.profile.toolsearch is not None:
            # Imported here: QuickJS and the search index cost ~40 ms of start-up a profile without them never needs.
            from ishiki_host.runtime.disclosure import ToolDisclosure

            self.disclosure = ToolDisclosure(self)
            self.disclosure.install(self.surface, self._bus)
        self._extra_hooks = tuple(extra_hooks)
        self._extra_tools = tuple(extra_tools)
        self._with_kernel = kernel_tools
        self._recent = RecentInbound()
        self.lifecycle = Lifecycle(self, host.clock)
        self.turns = TurnTracker(self)
        self.gate = CommandGate(self, self.turns.policy)
        self._filters: list[InboundFilter] = [self.gate]
        self.context_engine: Any = None
        self.wakeup_engine: Any = None
        self.toolcall_engine: Any = None

    # -- RuntimeContext ---------------------------------------------------------------------------------

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
        return self._host.config_dir

    @property
    def data_dir(self) -> Path:
        """The host's data directory."""
        return self._host.data_dir

    @property
    def clock(self) -> Clock:
        """The host's clock."""
        return self._host.clock

    @property
    def rng(self) -> random.Random:
        """Seeded from the host seed and the key when the host has a seed."""
        return self._rng

    @property
    def logger(self) -> logging.Logger:
        """``ishiki_host.runtime.<key>``."""
        return self._logger

    @property
    def log(self) -> FactLog:
        """The fact log (open while the runtime runs)."""
        return self.lifecycle.need(self.lifecycle.log, "log")

    @property
    def bus(self) -> EventBus:
        """The runtime's event bus."""
        return self._bus

    @property
    def agent(self) -> Agent:
        """The agent (exists once the engines are created; runs while the runtime does)."""
        return self.lifecycle.need(self.lifecycle.agent, "agent")

    @property
    def resources(self) -> ResourceCenter:
        """The runtime's resource center."""
        return self.lifecycle.need(self.lifecycle.resources, "resources").center

    @property
    def model(self) -> LanguageModel:
        """The profile's shared underlying model."""
        return self._parts.model

    @property
    def context_window(self) -> int:
        """The smallest context window among the profile model's members."""
        return self._parts.context_window

    @property
    def services(self) -> dict[str, Any]:
        """Host-wide services by name."""
        return self._host.services

    def models(self, ref: str) -> LanguageModel:
        """Another model of ``models.yaml`` (a group or ``provider:modelId``)."""
        return self._host.models(ref)

    async def wake(
        self, prompt: str | None = None, *, priority: Priority = "interactive", info: Mapping[str, Any] | None = None
    ) -> TurnHandle:
        """Queue a turn with ``prompt`` (missing or blank: "Continue."); ``info`` goes into its trigger."""
        text = prompt if prompt is not None and prompt.strip() else "Continue."
        return await self.agent.continue_(text, priority=priority, reason="wake", info=info)

    def spawn(self, fn: Callable[[], Awaitable[object]], *, name: str) -> None:
        """Run ``fn()`` in the runtime's task group, off the path of turns; a failure is logged with ``name``.

        The runtime counts as busy (not evicted) while it runs; a stopping runtime waits for it up to the
        shutdown grace, then cancels it.
        """

        async def work() -> None:
            try:
                await fn()
            except Exception:
                self._logger.exception("background work %r of runtime %s failed", name, self._key)

        self.lifecycle.background(work())

    # -- parts the hooks, tools and surface use ---------------------------------------------------------

    @property
    def parts(self) -> ProfileParts:
        """The profile's shared parts."""
        return self._parts

    @property
    def host(self) -> SharedParts:
        """The host's shared services."""
        return self._host

    @property
    def outbox(self) -> RuntimeOutbox:
        """Sends this runtime's messages."""
        return self.lifecycle.need(self.lifecycle.outbox, "outbox")

    @property
    def artifacts(self) -> ArtifactStore:
        """Archived large tool outputs."""
        return self.lifecycle.need(self.lifecycle.resources, "resources").artifacts

    @property
    def images(self) -> ImageResolver:
        """Image parts for the model."""
        return self.lifecycle.need(self.lifecycle.images, "images")

    @property
    def turn_state(self) -> TurnState:
        """The running turn's trust, inbound messages and sent ids."""
        return self.turns.turn

    @property
    def sessions(self) -> SessionManager:
        """The runtime's sessions (``/clear``, ``/compact``, automatic compactions)."""
        return self.lifecycle.need(self.lifecycle.sessions, "sessions")

    @property
    def extra_tools(self) -> Sequence[Tool]:
        """Tools the owner added."""
        return self._extra_tools

    @property
    def kernel_tools(self) -> Sequence[Tool]:
        """read, send_message, finish (none when built without kernel tools)."""
        return self.lifecycle.kernel if self._with_kernel else ()

    @property
    def wait_tool(self) -> Tool | None:
        """The wait tool (none without kernel tools)."""
        return self.lifecycle.wait if self._with_kernel else None

    @property
    def extra_hooks(self) -> tuple[AgentHooks, ...]:
        """Agent hooks the owner added (composed before the engines' hooks)."""
        return self._extra_hooks

    async def extension_tools(self) -> list[tuple[str, Sequence[Tool]]]:
        """Each extension's tools for this turn (the extensions switched on)."""
        return await self.extensions.tools(only=self.turns.turn.extensions)

    def admit_joined(self) -> None:
        """Move inbound messages appended since the turn began into it; they may lower its trust."""
        self.turns.admit_joined()

    def seed_pending(self, entries: Sequence[Entry]) -> None:
        """Inbound entries from before this start that no finished turn answered (they count for trust)."""
        self.turns.seed_pending(entries)

    def default_target(self) -> Target | None:
        """Where a reply without a target goes."""
        return self.outbox.default_target()

    # -- life cycle -------------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        """``new``, ``starting``, ``ready``, ``stopping`` or ``stopped``."""
        return self.lifecycle.state

    def idle_for(self) -> float | None:
        """Seconds since the last activity, or ``None`` while busy (a turn, a delivery, an armed wait)."""
        return self.lifecycle.idle_for()

    def cool(self) -> int:
        """Give back what an idle runtime need not hold: its fact log's cached entries (its next turn reads
        them from the file). Returns how many entries were dropped; 0 when the log is not open."""
        log = self.lifecycle.log
        return 0 if log is None or log.closed else log.shrink_cache()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start (see the module docstring), report ready, serve until ``stop``; always close cleanly."""
        with in_runtime(self):
            await self.lifecycle.run(task_status)

    async def stop(self, reason: str = "shutdown", *, grace: float | None = None) -> None:
        """Let running turns finish for ``grace`` seconds (the host's default), then abort, stop and close."""
        await self.lifecycle.stop(reason, self._host.shutdown_grace if grace is None else grace)

    async def settled(self) -> None:
        """Return once no turn runs or waits and every finished turn's end was handled (wrap in a deadline)."""
        await self.lifecycle.settled()

    async def mount_extension(self, instance: object, name: str | None = None) -> None:
        """Register an extension instance on the running runtime and run its ``ishiki_attach``."""
        label = name or type(instance).__name__
        self.extensions.register(label, instance)
        await self.extensions.attach(label, instance)

    def add_inbound_filter(self, inbound_filter: InboundFilter) -> None:
        """See every event before it is ingested (``InboundFilter``)."""
        self._filters.append(inbound_filter)

    def record_usage(self, data: dict[str, Any]) -> None:
        """Queue a ``usage`` entry for a call made outside the agent's model step."""
        self.lifecycle.record_usage(data)

    # -- input ------------------------------------------------------------------------------------------

    async def deliver(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> Entry | None:
        """Ingest ``event``: capture attachments, append it (joining a running turn); return the durable entry.

        Nothing is decided here: the wakeup engine decides after the append. ``None`` when an inbound filter
        consumed the event, or when it repeats one the runtime took before (``runtime.repeats``: a platform
        sent it again after a crash). ``AgentStopped`` when the runtime is not running.
        """
        if self.lifecycle.state != "ready":
            raise AgentStopped(f"runtime {self._key} is {self.lifecycle.state}; it takes no input")
        with self.lifecycle.delivering(), in_runtime(self):
            async with self._recent.admit(self.log, event) as new:
                if not new:
                    self._logger.info("%s %s in %s was taken before; ignored", event.kind, event.message_id, event.sid)
                    return None
                for inbound_filter in self._filters:
                    if await inbound_filter(self, event):
                        return None
                assets = self.lifecycle.need(self.lifecycle.resources, "resources").assets
                kept, problems = await capture_attachments(assets, attachments)
                data = inbound_message(event, self.turns.sender_level(event), kept)
                if problems:
                    data["attachment_errors"] = problems
                delivery = await self.agent.send(data, trigger=False, if_busy="join")
                return await delivery.wait()

    async def _wake_for_waiter(self, prompt: str | None, info: Mapping[str, object]) -> None:
        await self.agent.continue_(prompt, reason="wait", info=dict(info))

    # -- per turn ---------------------------------------------------------------------------------------

    async def setup_turn(self, turn: Turn) -> TurnSetup:
        """The agent's per-turn setup: trust, the extensions switched on, tool surface and system prompt."""
        await self.sessions.barrier()  # a /clear or /compact being written goes first
        state = self.turns.turn
        store = self.services.get("memory")
        if store is not None:
            state.extensions = tuple(await enabled_extensions(store, self.profile.id, self.extensions.names))
        trust = state.trust
        tools = await self.surface.assemble(SurfaceContext(self, turn, trust))
        return TurnSetup(system=await self.system_prompt(trust), tools=tools, trust=trust)

    async def system_prompt(self, trust: TrustLevel) -> str:
        """This turn's system prompt (see ``ishiki_host.runtime.prompt``)."""
        sections: list[str | None] = [
            self.profile.persona,
            control_flow(self._key, self.profile, trust, has_wait=self.wait_tool is not None),
            self.disclosure.instructions() if self.disclosure is not None else None,
            *await self.extensions.instructions(only=self.turns.turn.extensions),
        ]
        for engine in (self.toolcall_engine, self.context_engine):
            if engine is not None:
                sections.append(await engine.instructions())
        return join_sections(sections)

    def hooks(self) -> list[AgentHooks]:
        """The agent's hooks: the owner's, the context engine's, the toolcall engine's, the runtime's, then
        disclosure's (codemode / toolsearch), which redoes a step's tools after the runtime's trust filter."""
        hooks: list[AgentHooks] = list(self._extra_hooks)
        if self.context_engine is not None:
            hooks.append(self.context_engine.hooks())
        if self.toolcall_engine is not None:
            extra = self.toolcall_engine.hooks()
            if extra is not None:
                hooks.append(extra)
        hooks.append(RuntimeHooks(self))
        if self.disclosure is not None:
            hooks.append(self.disclosure.hooks())
        return hooks

    def __repr__(self) -> str:
        return f"<AgentRuntime {self._key} {self.lifecycle.state}>"
