"""``AgentRuntime``: one persona at one address, and the ``RuntimeContext`` its plugins see.

A runtime owns its home directory (``data/runtimes/<key>/``), its fact log, event bus, resource center, the
instances of its profile's three engines and extensions, and the agent. Its owner (a profile route, or the
test harness) runs it in a task group::

    runtime = AgentRuntime(key, parts, services)
    await tg.start(runtime.run)        # opens the log, creates the instances, recovers, attaches: ready
    entry = await runtime.deliver(event)   # ingest only; the wakeup engine decides whether a turn runs
    await runtime.stop()               # finishes (or after the grace aborts) turns, stops and disposes

Everything a turn needs is assembled per turn (``_setup``): the trust level from the senders of the turn's
new messages, the tool surface (``runtime.surface``), and the system prompt (``runtime.prompt``).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.core.agent import Agent
from ishiki_host.core.bus import BusEvent, EventBus
from ishiki_host.core.turns import Turn, TurnHandle, TurnOutcome, TurnSetup
from ishiki_host.errors import AgentStopped
from ishiki_host.runtime.extensions import MountedExtensions
from ishiki_host.runtime.hooks import RuntimeHooks
from ishiki_host.runtime.inbound import capture_attachments, inbound_message, is_inbound
from ishiki_host.runtime.lifecycle import Lifecycle
from ishiki_host.runtime.paths import RuntimeKey, runtime_dir
from ishiki_host.runtime.prompt import control_flow, join_sections
from ishiki_host.runtime.surface import SurfaceContext, default_surface
from ishiki_host.runtime.trust import TrustPolicy, lowest
from ishiki_host.runtime.turnstate import TurnReport, TurnState, source_target
from ishiki_host.runtime.usage import in_runtime
from ishiki_host.runtime.waiter import Waiter

if TYPE_CHECKING:
    from pathlib import Path

    from anyio.abc import TaskStatus

    from ishiki_host.channels.base import InboundAttachment
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog import FactLog
    from ishiki_host.core.hooks import AgentHooks
    from ishiki_host.core.model import LanguageModel, Priority
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.runtime.events import IshikiEvent
    from ishiki_host.runtime.images import ImageResolver
    from ishiki_host.runtime.outbound import RuntimeOutbox
    from ishiki_host.runtime.parts import HostServices, ProfileParts
    from ishiki_host.runtime.resources import ArtifactStore, ResourceCenter
    from ishiki_host.runtime.surface import ToolSurface
    from ishiki_host.tools.kernel import Target

__all__ = ["AgentRuntime", "InboundFilter"]

InboundFilter = Callable[["AgentRuntime", "IshikiEvent"], Awaitable[bool]]
"""Sees each event before it is ingested; returning ``True`` consumes it (the command layer's seam)."""

_LOGGER = logging.getLogger("ishiki_host.runtime")
_PENDING_LIMIT = 500  # inbound entries kept for a turn's trust; older ones only leave their level behind
_TURN_ENDS = ("turn.done", "turn.failed", "turn.aborted")


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
        host: HostServices,
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
        self._trust = TrustPolicy(parts.profile.trust)
        self._turn = TurnState(trust=TrustPolicy.home_level(key.sid))
        self._pending: list[Entry] = []
        self._pending_floor: TrustLevel | None = None
        self.extensions = MountedExtensions(self, self._logger)
        self.waiter = Waiter(host.clock, self._wake_for_waiter)
        self.surface = surface or default_surface()
        self._extra_hooks = tuple(extra_hooks)
        self._extra_tools = tuple(extra_tools)
        self._with_kernel = kernel_tools
        self._filters: list[InboundFilter] = []
        self._cycle = Lifecycle(self, host.clock)
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
        return self._cycle.need(self._cycle.log, "log")

    @property
    def bus(self) -> EventBus:
        """The runtime's event bus."""
        return self._bus

    @property
    def agent(self) -> Agent:
        """The agent (exists once the engines are created; runs while the runtime does)."""
        return self._cycle.need(self._cycle.agent, "agent")

    @property
    def resources(self) -> ResourceCenter:
        """The runtime's resource center."""
        return self._cycle.need(self._cycle.resources, "resources").center

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

    async def wake(self, prompt: str | None = None, *, priority: Priority = "interactive") -> TurnHandle:
        """Queue a turn with ``prompt`` (missing or blank: "Continue.")."""
        text = prompt if prompt is not None and prompt.strip() else "Continue."
        return await self.agent.continue_(text, priority=priority, reason="wake")

    # -- parts the hooks, tools and surface use ---------------------------------------------------------

    @property
    def parts(self) -> ProfileParts:
        """The profile's shared parts."""
        return self._parts

    @property
    def host(self) -> HostServices:
        """The host's shared services."""
        return self._host

    @property
    def outbox(self) -> RuntimeOutbox:
        """Sends this runtime's messages."""
        return self._cycle.need(self._cycle.outbox, "outbox")

    @property
    def artifacts(self) -> ArtifactStore:
        """Archived large tool outputs."""
        return self._cycle.need(self._cycle.resources, "resources").artifacts

    @property
    def images(self) -> ImageResolver:
        """Image parts for the model."""
        return self._cycle.need(self._cycle.images, "images")

    @property
    def turn_state(self) -> TurnState:
        """The running turn's trust, inbound messages and sent ids."""
        return self._turn

    @property
    def extra_tools(self) -> Sequence[Tool]:
        """Tools the owner added."""
        return self._extra_tools

    @property
    def kernel_tools(self) -> Sequence[Tool]:
        """read, send_message, finish (none when built without kernel tools)."""
        return self._cycle.kernel if self._with_kernel else ()

    @property
    def wait_tool(self) -> Tool | None:
        """The wait tool (none without kernel tools)."""
        return self._cycle.wait if self._with_kernel else None

    @property
    def extra_hooks(self) -> tuple[AgentHooks, ...]:
        """Agent hooks the owner added (composed before the engines' hooks)."""
        return self._extra_hooks

    async def extension_tools(self) -> list[tuple[str, Sequence[Tool]]]:
        """Each extension's tools for this turn."""
        return await self.extensions.tools()

    def admit_joined(self) -> None:
        """Move inbound messages appended since the turn began into it; they may lower its trust."""
        if not self._pending:
            return
        entries, self._pending = self._pending, []
        levels = [self._trust.of_entry(e) for e in entries]
        if self._pending_floor is not None:
            levels.append(self._pending_floor)
            self._pending_floor = None
        self._turn.inbound.extend(entries)
        self._turn.trust = lowest([self._turn.trust, *levels], self._turn.trust)

    def seed_pending(self, entries: Sequence[Entry]) -> None:
        """Inbound entries from before this start that no finished turn answered (they count for trust)."""
        known = {e.id for e in self._pending}
        for entry in sorted(entries, key=lambda e: e.id):
            if entry.id not in known:
                known.add(entry.id)
                self._pending.append(entry)

    def default_target(self) -> Target | None:
        """Where a reply without a target goes."""
        return self.outbox.default_target()

    # -- life cycle -------------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        """``new``, ``starting``, ``ready``, ``stopping`` or ``stopped``."""
        return self._cycle.state

    def idle_for(self) -> float | None:
        """Seconds since the last activity, or ``None`` while busy (a turn, a delivery, an armed wait)."""
        return self._cycle.idle_for()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start (see the module docstring), report ready, serve until ``stop``; always close cleanly."""
        with in_runtime(self):
            await self._cycle.run(task_status)

    async def stop(self, reason: str = "shutdown", *, grace: float | None = None) -> None:
        """Let running turns finish for ``grace`` seconds (the host's default), then abort, stop and close."""
        await self._cycle.stop(reason, self._host.shutdown_grace if grace is None else grace)

    async def settled(self) -> None:
        """Return once no turn runs or waits and every finished turn's end was handled (wrap in a deadline)."""
        await self._cycle.settled()

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
        self._cycle.record_usage(data)

    # -- input ------------------------------------------------------------------------------------------

    async def deliver(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> Entry | None:
        """Ingest ``event``: capture attachments, append it (joining a running turn); return the durable entry.

        Nothing is decided here: the wakeup engine decides after the append. ``None`` when an inbound filter
        consumed the event. ``AgentStopped`` when the runtime is not running.
        """
        if self._cycle.state != "ready":
            raise AgentStopped(f"runtime {self._key} is {self._cycle.state}; it takes no input")
        with self._cycle.delivering(), in_runtime(self):
            for inbound_filter in self._filters:
                if await inbound_filter(self, event):
                    return None
            assets = self._cycle.need(self._cycle.resources, "resources").assets
            kept, problems = await capture_attachments(assets, attachments)
            sender = f"{event.platform}:{event.user.id}" if event.user is not None else None
            data = inbound_message(event, self._trust.level(sender), kept)
            if problems:
                data["attachment_errors"] = problems
            delivery = await self.agent.send(data, trigger=False, if_busy="join")
            return await delivery.wait()

    async def _wake_for_waiter(self, prompt: str | None, info: Mapping[str, object]) -> None:
        await self.agent.continue_(prompt, reason="wait", info=dict(info))

    # -- per turn ---------------------------------------------------------------------------------------

    async def setup_turn(self, turn: Turn) -> TurnSetup:
        """The agent's per-turn setup: trust, tool surface and system prompt."""
        trust = self._turn.trust
        tools = await self.surface.assemble(SurfaceContext(self, turn, trust))
        return TurnSetup(system=await self.system_prompt(trust), tools=tools, trust=trust)

    async def system_prompt(self, trust: TrustLevel) -> str:
        """This turn's system prompt (see ``ishiki_host.runtime.prompt``)."""
        sections: list[str | None] = [
            self.profile.persona,
            control_flow(self._key, self.profile, trust, has_wait=self.wait_tool is not None),
            *await self.extensions.instructions(),
        ]
        for engine in (self.toolcall_engine, self.context_engine):
            if engine is not None:
                sections.append(await engine.instructions())
        return join_sections(sections)

    async def _on_appended(self, event: BusEvent) -> None:
        entry: Entry = event["entry"]
        if not is_inbound(entry):
            return
        self._pending.append(entry)
        if len(self._pending) > _PENDING_LIMIT:
            dropped = self._pending.pop(0)
            floor = [self._pending_floor] if self._pending_floor is not None else []
            self._pending_floor = lowest([self._trust.of_entry(dropped), *floor], "owner")
        self._cycle.last_target = source_target(entry) or self._cycle.last_target
        await self.waiter.note_message()

    def _on_turn_start(self, event: BusEvent) -> None:
        turn: Turn = event["turn"]
        self._turn = TurnState(trust=TrustPolicy.home_level(self._key.sid), number=turn.number)
        if self._pending:
            # A turn with new messages runs at the lowest level among their senders, whatever the home level.
            self._turn.trust = "owner"
            self.admit_joined()
        self.waiter.clear()
        self._cycle.turn_started(turn, self._turn.latest_target())

    def _on_sent(self, event: BusEvent) -> None:
        self._turn.sent.extend(event["ids"])

    async def _on_turn_end(self, event: BusEvent) -> None:
        outcome: TurnOutcome = event["outcome"]
        state = self._turn
        self._turn = TurnState(trust=TrustPolicy.home_level(self._key.sid))
        report = TurnReport(
            outcome.turn,
            outcome.status,
            outcome.reason,
            outcome.error,
            tuple(state.inbound),
            tuple(state.sent),
            outcome,
        )
        self._cycle.background(self.extensions.turn_finished(report))
        if outcome.unseen and self.wakeup_engine is not None:
            try:
                await self.wakeup_engine.reconsider(list(outcome.unseen))
            except Exception:
                self._logger.exception("the wakeup engine failed to reconsider %d message(s)", len(outcome.unseen))
        self._cycle.turn_ended()

    def subscribe_early(self) -> None:
        """Subscriptions that must see events before the wakeup engine does."""
        self._bus.subscribe("message.appended", self._on_appended)
        self._bus.subscribe("turn.start", self._on_turn_start)
        self._bus.subscribe("message.sent", self._on_sent)

    def subscribe_late(self) -> None:
        """Subscriptions that must run after the wakeup engine's own handlers."""
        for name in _TURN_ENDS:
            self._bus.subscribe(name, self._on_turn_end)

    def hooks(self) -> list[AgentHooks]:
        """The agent's hooks: the owner's, the context engine's, the toolcall engine's, the runtime's."""
        hooks: list[AgentHooks] = list(self._extra_hooks)
        if self.context_engine is not None:
            hooks.append(self.context_engine.hooks())
        if self.toolcall_engine is not None:
            extra = self.toolcall_engine.hooks()
            if extra is not None:
                hooks.append(extra)
        hooks.append(RuntimeHooks(self))
        return hooks

    def __repr__(self) -> str:
        return f"<AgentRuntime {self._key} {self._cycle.state}>"
