"""``AgentRuntime``: one persona at one address.

A runtime owns its home directory (``data/runtimes/<key>/``), its fact log, event bus, resource center, the
instances of its profile's three engines and extensions, and the agent. Its owner (a profile route, or the
test harness) runs it in a task group::

    runtime = AgentRuntime(key, parts, shared)
    await tg.start(runtime.run)        # opens the log, creates the instances, recovers, attaches: ready
    entry = await runtime.deliver(event)   # ingest only; the wakeup engine decides whether a turn runs
    await runtime.stop()               # finishes (or after the grace aborts) turns, stops and disposes

Its plugins never see the runtime itself: they get ``runtime.context`` (a ``RuntimeContext``,
``ishiki_host.runtime.context``), the contract and nothing more.

Everything a turn needs is assembled per turn (``_setup_turn``): the trust level from the senders of the turn's
new messages (``TurnTracker``), the extensions and tools switched on for the profile (``plugin_settings``), the
tool surface (``runtime.surface``), and the system prompt (``runtime.prompt``). Every runtime has a command
layer (``CommandGate``: admission, slash commands) as its first inbound filter, and a ``SessionManager``
(``/clear``, ``/compact``, compactions); the memory extension keeps the sessions in the memory database.

Start, in order: take the home, open the fact log, build the resource center and the kernel tools, create the
engine instances (context, toolcall, wakeup) and the extension instances, build the agent and the sessions,
start the agent (it repairs the log after a crash) and the engines' own background tasks, attach the
extensions, build the command table (the host's commands, then the extensions'), attach the wakeup engine, and
re-run the wake decision for what a crashed or stopped turn left unanswered, and for input the host made
durable but died before deciding on (``ishiki_host.runtime.tail``). Stopping is ``Lifecycle``'s.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.addresses.keys import RuntimeKey, runtime_dir
from ishiki_host.channels.inbound import capture_attachments, inbound_message
from ishiki_host.channels.repeats import RecentInbound
from ishiki_host.core.agent import Agent
from ishiki_host.core.bus import EventBus
from ishiki_host.core.turns import Turn, TurnSetup
from ishiki_host.errors import AgentStopped
from ishiki_host.gateway.attribution import TurnCallModel, in_runtime
from ishiki_host.jsontypes import Json
from ishiki_host.resources import create_runtime_resources
from ishiki_host.runtime.activity import TurnActivities
from ishiki_host.runtime.apology import FailureReplies
from ishiki_host.runtime.captures import CaptureLedger
from ishiki_host.runtime.context import PluginContext
from ishiki_host.runtime.drafts import DraftRelay
from ishiki_host.runtime.extensions import MountedExtensions
from ishiki_host.runtime.gate import CommandGate
from ishiki_host.runtime.hooks import RuntimeHooks
from ishiki_host.runtime.hostview import RuntimeView
from ishiki_host.runtime.images import ImageResolver
from ishiki_host.runtime.lifecycle import Lifecycle
from ishiki_host.runtime.notices import Notices
from ishiki_host.runtime.outbound import RuntimeOutbox
from ishiki_host.runtime.policy import SWITCHES_STAGE, switches_stage
from ishiki_host.runtime.prompt import control_flow, join_sections
from ishiki_host.runtime.started import Engines, Started, create_engines
from ishiki_host.runtime.surface import SurfaceContext, default_surface
from ishiki_host.runtime.switches import enabled_extensions
from ishiki_host.runtime.tail import scan_tail
from ishiki_host.runtime.tracker import TurnTracker
from ishiki_host.runtime.trust import TrustPolicy
from ishiki_host.runtime.waiter import Waiter
from ishiki_host.sessions.manager import SessionManager
from ishiki_host.sessions.summarizer import Summarizer
from ishiki_host.sessions.threshold import compact_if_needed
from ishiki_host.tools.kernel import make_finish_tool, make_send_message_tool, make_wait_tool
from ishiki_host.tools.read import make_read_tool

if TYPE_CHECKING:
    from pathlib import Path

    from anyio.abc import TaskGroup, TaskStatus

    from ishiki_host.addresses.ids import Target
    from ishiki_host.channels.base import InboundAttachment
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.hooks import AgentHooks
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.plugins.runtime_api import RuntimeContext, TurnReport
    from ishiki_host.runtime.disclosure import ToolDisclosure
    from ishiki_host.runtime.parts import ProfileParts, SharedParts
    from ishiki_host.runtime.surface import ToolSurface
    from ishiki_host.store.repos.images import ImagesRepo

__all__ = ["AgentRuntime", "InboundFilter"]

InboundFilter = Callable[["IshikiEvent"], Awaitable[bool]]
"""Sees each event before it is ingested; returning ``True`` consumes it (the command layer's seam)."""

_LOGGER = logging.getLogger("ishiki_host.runtime")


def _runtime_logger(key: RuntimeKey) -> logging.Logger:
    # Not registered with logging's manager (which keeps every logger forever): it goes away with its runtime.
    logger = logging.Logger(f"ishiki_host.runtime.{key}")
    logger.parent = _LOGGER
    return logger


class AgentRuntime:
    """One runtime (see the module docstring)."""

    def __init__(
        self,
        key: RuntimeKey,
        parts: ProfileParts,
        shared: SharedParts,
        *,
        home: Path | None = None,
        extra_hooks: Sequence[AgentHooks] = (),
        extra_tools: Sequence[Tool] = (),
        kernel_tools: bool | Collection[str] = True,
        surface: ToolSurface | None = None,
    ):
        self._key = key
        self._parts = parts
        self._shared = shared
        self._home = home if home is not None else runtime_dir(shared.data_dir, key)
        self._bus = EventBus()
        self._logger = _runtime_logger(key)
        self._rng = random.Random(None if shared.seed is None else f"{shared.seed}/{key}")
        self._extra_hooks = tuple(extra_hooks)
        self._extra_tools = tuple(extra_tools)
        # Which kernel tools are offered: every one (True), none (False), or those named (a test's choice).
        self._kernel_names = None if kernel_tools is True else frozenset(() if kernel_tools is False else kernel_tools)
        self._started: Started | None = None
        self._wakeup_dispose: Any = None
        self._waiter = Waiter(shared.clock, self._wake_for_waiter)
        outlets = self._outlets = shared.outlets
        self._lifecycle = Lifecycle(
            key,
            self._logger,
            shared.clock,
            home=self._home,
            homes=shared.homes,
            waiter=self._waiter,
            outlets=outlets,
            shutdown_grace=shared.shutdown_grace,
        )
        self._notices = Notices(key, outlets, self._default_target)
        apology = FailureReplies(
            parts.profile.failure_reply, self._notices.notice, self._notices.show_failure, self._logger
        )
        self._tracker = TurnTracker(
            TrustPolicy(parts.profile.trust), key.sid, self._waiter, self._lifecycle, self._logger,
            finished=self._turn_finished, closing=apology.turn_ended, clock=shared.clock,
        )  # fmt: skip
        self._context = PluginContext(
            key,
            parts,
            shared,
            home=self._home,
            bus=self._bus,
            logger=self._logger,
            rng=self._rng,
            started=self._need_started,
            turn=lambda: self._tracker.turn,
            spawn=self._spawn,
            notices=self._notices,
        )
        self._extensions = MountedExtensions(self._context, self._logger, shared.hooks)
        self._surface = surface or default_surface()
        if surface is None:
            self._surface.add(SWITCHES_STAGE, switches_stage(shared.services, parts.profile.id), after="extensions")
        self._disclosure: ToolDisclosure | None = None  # codemode / toolsearch, when the profile turns them on
        if parts.profile.codemode is not None or parts.profile.toolsearch is not None:
            # Imported here: QuickJS and the search index cost ~40 ms of start-up a profile without them never needs.
            from ishiki_host.runtime.disclosure import ToolDisclosure

            self._disclosure = ToolDisclosure(self._context)
            self._disclosure.install(self._surface, self._bus)
        view = self._view = RuntimeView(
            self._context, self._extensions, self._base_tools, self._wait_tool,
            connection=lambda: outlets.connection(key.sid) if key.sid is not None else None,
            channels=shared.channels,
        )  # fmt: skip
        self._gate = CommandGate(
            self._context, self._tracker.policy, self._extensions, view, self._notices, shared.commands
        )
        self._filters: list[InboundFilter] = [self._gate]
        self._recent = RecentInbound()
        self._captures = CaptureLedger(str(key), shared.data_dir, lambda: _images_of(shared), self._logger)
        self._tools_source = _TurnTools(
            self._extra_tools, self._kernel_tools, self._wait_tool, self._turn_extension_tools
        )

    # -- what the owner uses ----------------------------------------------------------------------------

    @property
    def key(self) -> RuntimeKey:
        """``profile/sid/channel``, or ``profile/main`` in cross mode."""
        return self._key

    @property
    def context(self) -> RuntimeContext:
        """The runtime as its plugins see it."""
        return self._context

    async def tool_surface(self) -> Sequence[Tool]:
        """Every tool a turn could offer before switches and trust filter them, as ``/tools`` lists them."""
        return await self._view.tool_surface()

    @property
    def state(self) -> str:
        """``new``, ``starting``, ``ready``, ``stopping`` or ``stopped``."""
        return self._lifecycle.state

    def idle_for(self) -> float | None:
        """Seconds since the last activity, or ``None`` while busy (a turn, a delivery, an armed wait)."""
        return self._lifecycle.idle_for()

    async def cool(self) -> int:
        """Give back what an idle runtime need not hold: its fact log's cached entries (its next turn reads
        them from the file) and the file itself (``FactLog.park``: the next input opens it again). Returns
        how many entries were dropped; 0 when the log is not open."""
        log = self._started.log if self._started is not None else None
        if log is None or log.closed:
            return 0
        dropped = log.shrink_cache()
        await log.park()
        return dropped

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start (see the module docstring), report ready, serve until ``stop``; always close cleanly."""
        with in_runtime(self):
            await self._lifecycle.run(task_status, self._open, self._begin, self._release)

    async def stop(self, reason: str = "shutdown", *, grace: float | None = None) -> None:
        """Let running turns finish for ``grace`` seconds (the host's default), then abort, stop and close."""
        await self._lifecycle.stop(reason, self._shared.shutdown_grace if grace is None else grace)

    async def settled(self, *, background: bool = False) -> None:
        """Return once no turn runs or waits and every finished turn's end was handled; with ``background``,
        once no work given to ``spawn`` runs either (the extensions' work after a turn). Wrap it in a deadline."""
        await self._lifecycle.settled()
        if background:
            await self._lifecycle.background_done()

    async def mount_extension(self, instance: object, name: str | None = None) -> None:
        """Register an extension instance on the running runtime and run its ``ishiki_attach``."""
        label = name or type(instance).__name__
        self._extensions.register(label, instance)
        await self._extensions.attach(label, instance)

    def command_names(self) -> list[str]:
        """The slash commands this runtime answers (names and aliases, without the ``/``), sorted; empty until
        its command table is built (at the end of its start)."""
        return sorted(name for command in self._gate.table.commands() for name in command.names)

    def add_inbound_filter(self, inbound_filter: InboundFilter) -> None:
        """See every event before it is ingested (``InboundFilter``), after the command layer."""
        self._filters.append(inbound_filter)

    def record_usage(self, data: dict[str, Json]) -> None:
        """Queue a ``usage`` entry for a call made outside the agent's model step (``UsageSink``)."""
        self._lifecycle.record_usage(data)

    async def deliver(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> Entry | None:
        """Ingest ``event``: capture attachments, append it (joining a running turn); return the durable entry.

        Nothing is decided here: the wakeup engine decides after the append. ``None`` when an inbound filter
        consumed the event, or when it repeats one the runtime took before (``channels.repeats``: a platform
        sent it again after a crash). ``AgentStopped`` when the runtime is not running.
        """
        if self._lifecycle.state != "ready":
            raise AgentStopped(f"runtime {self._key} is {self._lifecycle.state}; it takes no input")
        started = self._need_started()
        with self._lifecycle.delivering(), in_runtime(self):
            async with self._recent.admit(started.log, event) as new:
                if not new:
                    self._logger.info("%s %s in %s was taken before; ignored", event.kind, event.message_id, event.sid)
                    return None
                for inbound_filter in self._filters:
                    if await inbound_filter(event):
                        return None
                kept, problems = await capture_attachments(started.resources.assets, attachments)
                await self._captures.record(started.resources.assets, kept)  # logs a failure, never raises it
                data = inbound_message(event, self._tracker.sender_level(event), kept)
                if problems:
                    data["attachment_errors"] = problems
                delivery = await started.agent.send(data, trigger=False, if_busy="join")
                return await delivery.wait()

    def __repr__(self) -> str:
        return f"<AgentRuntime {self._key} {self._lifecycle.state}>"

    # -- what the runtime is made of --------------------------------------------------------------------

    def _need_started(self) -> Started:
        if self._started is None:
            raise AgentStopped(f"runtime {self._key}: it has not started (the runtime is {self._lifecycle.state})")
        return self._started

    def _spawn(self, fn: Callable[[], Awaitable[object]], name: str) -> None:
        """Run ``fn()`` in the runtime's task group, off the path of turns; a failure is logged with ``name``."""

        async def work() -> None:
            try:
                await fn()
            except Exception:
                self._logger.exception("background work %r of runtime %s failed", name, self._key)

        self._lifecycle.background(work())

    def _default_target(self) -> Target | None:
        return self._started.outbox.default_target() if self._started is not None else None

    def _kernel_tools(self) -> Sequence[Tool]:
        """read, send_message, finish, or those of them the owner named (none before the start)."""
        if self._started is None:
            return ()
        names = self._kernel_names
        return self._started.kernel if names is None else [t for t in self._started.kernel if t.name in names]

    def _base_tools(self) -> list[Tool]:
        """The owner's extra tools, then the kernel's."""
        return [*self._extra_tools, *self._kernel_tools()]

    async def _turn_extension_tools(self) -> list[tuple[str, Sequence[Tool]]]:
        return await self._extensions.tools(only=self._tracker.turn.extensions)

    def _wait_tool(self) -> Tool | None:
        wanted = self._kernel_names is None or "wait" in self._kernel_names
        return self._started.wait if self._started is not None and wanted else None

    async def _open(self) -> None:
        parts, shared, clock = self._parts, self._shared, self._shared.clock
        log = await shared.logs.open(self._key, self._home, fsync=shared.fsync, clock=clock, syncer=shared.syncer)
        self._lifecycle.bind_log(log)
        resources = create_runtime_resources(self._home, clock=clock, fetchers=shared.fetchers)
        resources.assets.max_bytes = parts.profile.resources.max_asset_bytes
        tracker = self._tracker
        outbox = RuntimeOutbox(
            self._key,
            parts.profile,
            self._outlets,
            self._bus,
            clock,
            lambda: tracker.turn,
            lambda: tracker.last_target,
            fence=partial(shared.fence, self._key) if shared.fence is not None else None,
        )
        images = ImageResolver(resources.center, accepts_images=parts.accepts_images)
        read = make_read_tool(resources.center, trust=lambda: tracker.turn.trust)
        kernel = (read, make_send_message_tool(outbox), make_finish_tool())
        engines = create_engines(parts, self._context)
        drafts = DraftRelay(
            self._key, parts.profile, outbox, self._bus, self._lifecycle.background, text_is_reply=engines.text_is_reply
        )
        for use, provider in parts.extensions:
            try:
                instance = provider.create(self._context, use.config)
            except Exception as exc:
                raise RuntimeError(f"extension {use.name!r} failed to create its instance: {exc}") from exc
            self._extensions.register(use.name, instance)
        hooks = RuntimeHooks(
            parts.profile,
            lambda: tracker.turn,
            log,
            outbox,
            resources.artifacts,
            images,
            tracker.admit_joined,
            text_is_reply=engines.text_is_reply,
            drafts=drafts,
        )
        model = engines.toolcall.wrap(parts.model) if engines.toolcall is not None else parts.model
        agent = Agent(
            log,
            TurnCallModel(model),
            self._setup_turn,
            hooks=self._agent_hooks(engines, hooks),
            bus=self._bus,
            clock=clock,
            max_steps=parts.profile.max_steps,
            shutdown_grace=shared.shutdown_grace,
            before_turn=self._before_turn,
            stream_for=drafts.for_step,
        )
        self._lifecycle.bind_agent(agent)
        sessions = SessionManager(
            runtime_key=str(self._key),
            profile=parts.profile.id,
            log=log,
            agent=agent,
            summarizer=Summarizer(TurnCallModel(parts.model)),  # it logs its own usage
            trust_of=tracker.policy.of_entry,
            on_carried=tracker.seed_pending,
            unanswered=tracker.unanswered,
        )
        wait = make_wait_tool(self._waiter)
        self._started = Started(log, resources, outbox, images, kernel, wait, engines, agent, sessions)

    def _agent_hooks(self, engines: Engines, runtime_hooks: RuntimeHooks) -> list[AgentHooks]:
        """The owner's hooks, the context engine's, the toolcall engine's, the runtime's, then disclosure's
        (codemode / toolsearch), which redoes a step's tools after the runtime's trust filter."""
        hooks: list[AgentHooks] = list(self._extra_hooks)
        if engines.context is not None:
            hooks.append(engines.context.hooks())
        extra = engines.toolcall.hooks() if engines.toolcall is not None else None
        if extra is not None:
            hooks.append(extra)
        hooks.append(runtime_hooks)
        if self._disclosure is not None:
            hooks.append(self._disclosure.hooks())
        return hooks

    async def _begin(self, tg: TaskGroup) -> None:
        started = self._need_started()
        engines = started.engines
        tail = await started.log.read_back(scan_tail)
        self._tracker.last_target = tail.target
        self._waiter.bind(tg)
        wakeup = engines.wakeup
        self._tracker.subscribe(self._bus, wakeup.reconsider if wakeup is not None else None)
        activities = TurnActivities(
            self._outlets, self._shared.clock, self._parts.model.name, lambda: self._tracker.turn.latest_target()
        )
        activities.subscribe(self._bus)  # the thinking line of the channel a person's turn answers
        await tg.start(started.agent.run)
        for run in engines.background_tasks():
            await tg.start(run)
        recovered = started.agent.recovered
        interrupted = list(recovered.unanswered) if recovered is not None and recovered.aborted_turn else []
        self._tracker.seed_pending([*tail.pending, *interrupted])
        for name, instance in zip(self._extensions.names, self._extensions.instances, strict=True):
            await self._extensions.attach(name, instance)
        await self._gate.build()
        if wakeup is not None:
            self._wakeup_dispose = wakeup.attach(self._context)
        again = {e.id: e for e in [*interrupted, *tail.undecided]}
        if again and wakeup is not None:
            self._logger.info("the host stopped before deciding on %d message(s); deciding now", len(again))
            await wakeup.reconsider([again[i] for i in sorted(again)])

    async def _release(self) -> None:
        """Every extension's ``ishiki_stop`` and dispose, then the wakeup engine's dispose."""
        try:
            await self._extensions.stop_all()
        except Exception:
            self._logger.exception("stopping the extensions of %s failed", self._key)
        if self._wakeup_dispose is not None:
            try:
                result = self._wakeup_dispose()
                if hasattr(result, "__await__"):
                    await result
            except Exception:
                self._logger.exception("the wakeup engine's dispose failed")

    async def _before_turn(self) -> None:
        """``session.summarizer: manual``: compact a session over its threshold before the turn runs."""
        session = self._parts.profile.session
        if session.summarizer != "manual":
            return
        await compact_if_needed(
            self._need_started().sessions,
            context_window=self._parts.context_window,
            threshold=session.compact_threshold,
            notify=self._context.notice,
        )

    async def _wake_for_waiter(self, prompt: str | None, info: Mapping[str, object]) -> None:
        await self._need_started().agent.continue_(prompt, reason="wait", info=dict(info))

    def _turn_finished(self, report: TurnReport, extensions: tuple[str, ...] | None) -> None:
        for listener in self._shared.turn_listeners:
            try:
                listener(self._key, report)
            except Exception:  # a listener's bug must not take the turn's end handling down
                self._logger.exception("turn listener %r failed", listener)
        if self._extensions.implements("ishiki_turn_finished"):
            self._lifecycle.background(self._extensions.turn_finished(report, only=extensions))

    # -- per turn ---------------------------------------------------------------------------------------

    async def _setup_turn(self, turn: Turn) -> TurnSetup:
        """The agent's per-turn setup: trust, the extensions switched on, tool surface and system prompt."""
        started = self._need_started()
        await started.sessions.barrier()  # a /clear or /compact being written goes first
        state = self._tracker.turn
        store = self._shared.services.memory
        if store is not None:
            state.extensions = tuple(await enabled_extensions(store, self._parts.profile.id, self._extensions.names))
        trust = state.trust
        tools = await self._surface.assemble(SurfaceContext(self._tools_source, turn, trust))
        return TurnSetup(system=await self._system_prompt(trust), tools=tools, trust=trust)

    async def _system_prompt(self, trust: TrustLevel) -> str:
        """This turn's system prompt (see ``ishiki_host.runtime.prompt``)."""
        profile = self._parts.profile
        sections: list[str | None] = [
            profile.persona,
            control_flow(self._key, profile, trust, has_wait=self._wait_tool() is not None),
            self._disclosure.instructions() if self._disclosure is not None else None,
            *await self._extensions.instructions(only=self._tracker.turn.extensions),
        ]
        engines = self._need_started().engines
        for engine in (engines.toolcall, engines.context):
            if engine is not None:
                sections.append(await engine.instructions())
        return join_sections(sections)


def _images_of(shared: SharedParts) -> ImagesRepo | None:
    """The ``images`` table of the host's memory database, when it is open."""
    store = shared.services.memory
    return store.images if store is not None else None


class _TurnTools:
    """A runtime's ``SurfaceSource``: the tools its default stages put together, read when a turn is set up."""

    __slots__ = ("_extensions", "_extra", "_kernel", "_wait")

    def __init__(
        self,
        extra: Sequence[Tool],
        kernel: Callable[[], Sequence[Tool]],
        wait: Callable[[], Tool | None],
        extensions: Callable[[], Awaitable[list[tuple[str, Sequence[Tool]]]]],
    ):
        self._extra = extra
        self._kernel = kernel
        self._wait = wait
        self._extensions = extensions

    @property
    def extra_tools(self) -> Sequence[Tool]:
        """Tools the owner added."""
        return self._extra

    @property
    def kernel_tools(self) -> Sequence[Tool]:
        """read, send_message, finish (none when built without kernel tools)."""
        return self._kernel()

    @property
    def wait_tool(self) -> Tool | None:
        """The wait tool (none without kernel tools)."""
        return self._wait()

    async def extension_tools(self) -> list[tuple[str, Sequence[Tool]]]:
        """Each extension's tools for this turn (the extensions switched on)."""
        return await self._extensions()
