"""``Host``: a config directory, running. An async context manager that owns the host's task group::

    async with Host(Path("mybot")) as host:
        await host.wait_stop_requested()      # a signal handler or the console calls host.request_stop()

Entering loads the config dir (unless one is given), takes the lock of its data directory (a second host on
it gets ``ConfigDirLocked`` and changes nothing; ``ishiki_host.host.lock``), builds the model gateway, opens
the memory database (``services.memory``; ``ishiki_host.host.memory_db``), activates every ready profile (a
route with its own task group), starts the channels their claims need (each under a supervisor that restarts it with
back-off; before them, the HTTP server they mount webhooks on when ``http.listen`` is set:
``ishiki_host.ingress``; between the two, the host plugins of ``plugins``: ``ishiki_host.host.hostplugins``),
starts the heartbeat scheduler (shared under ``HEARTBEATS``; ``ishiki_host.host.beats``),
and polls the config files (the skills folder and ``heartbeats.json`` too) for hot reload. What it tells about
itself (metrics, ``/readyz``, usage counts, the answered-message line, the control socket ``ishiki status``
asks) is wired by ``ishiki_host.host.observability``, before the gateway and the runtimes. While it runs, the
garbage collector's youngest threshold is raised (``ishiki_host.host.collector``). Entering raises the soft limit
on open files to the hard one (said in the log), and the runtimes alive at once stay under it (``budget``:
``ishiki_host.host.budget``). ``dispatch`` (what
channels call) routes an event to its runtime and returns once it is durable. Leaving stops everything: channels take no
more input, turns get the grace to finish, every runtime stops its extensions and closes its log, the channels and
then the host plugins stop, and the HTTP server last.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.commands import builtin_commands
from ishiki_host.config.host import HttpSettings
from ishiki_host.core.clock import Clock, SystemClock
from ishiki_host.errors import (
    AgentStopped,
    ChannelError,
    ChannelUnavailable,
    FactLogError,
    RunError,
    RuntimeStartFailed,
    StoreError,
)
from ishiki_host.gateway.embeddings import GatewayEmbeddings
from ishiki_host.host.beats import start_heartbeats
from ishiki_host.host.budget import RuntimeBudget
from ishiki_host.host.collector import tuned_collector
from ishiki_host.host.connections import ChannelDirectory
from ishiki_host.host.delivery import Unrouted
from ishiki_host.host.fleetstart import open_fleet
from ishiki_host.host.hostplugins import HostPluginSet
from ishiki_host.host.lock import PID_FILE, DataDirClaim, claim_data_dir
from ishiki_host.host.memory_db import HostMemory
from ishiki_host.host.observability import HostObservability
from ishiki_host.host.openfiles import raise_open_files_limit
from ishiki_host.host.resume import resume_routes
from ishiki_host.host.roles import HostRole
from ishiki_host.host.routes import ProfileRoute, RouteTable
from ishiki_host.host.runtimes import HostRuntimes
from ishiki_host.host.setup import (
    ChannelSet,
    GatewaySet,
    ReloadReport,
    log_config_problems,
    log_profile_state,
)
from ishiki_host.host.watch import Snapshot, snapshot, watch
from ishiki_host.ingress import HttpIngress
from ishiki_host.plugins.configdir import load_config_dir
from ishiki_host.plugins.discovery import discover
from ishiki_host.plugins.services import HostServices, run_logged
from ishiki_host.runtime.parts import ProviderCache, SharedParts, profile_parts

if TYPE_CHECKING:
    import httpx
    from anyio.abc import TaskGroup

    from ishiki_host.channels.base import Delivery, InboundAttachment
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.gateway.gateway import CallListener
    from ishiki_host.heartbeat.service import HeartbeatService
    from ishiki_host.host.fleet import Fleet
    from ishiki_host.host.placement import RuntimePlacement
    from ishiki_host.plugins.activation import ProfileState
    from ishiki_host.plugins.configdir import ConfigDir
    from ishiki_host.plugins.discovery import PluginRegistry
    from ishiki_host.runtime.runtime import AgentRuntime

__all__ = ["PID_FILE", "Host", "ReloadReport"]

logger = logging.getLogger("ishiki_host.host")


class Host:
    """A running config directory (see the module docstring).

    ``model_listeners`` are called after every model call of every gateway the host builds
    (``Gateway.add_listener``): ``ishiki run`` says with one what to configure when no model answers.
    """

    def __init__(
        self,
        root: Path,
        *,
        config: ConfigDir | None = None,
        registry: Callable[[], PluginRegistry] | None = None,
        clock: Clock | None = None,
        seed: int | None = None,
        env: Mapping[str, str] | None = None,
        reload_interval: float | None = None,
        shutdown_grace: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        model_listeners: Sequence[CallListener] = (),
        role: HostRole | None = None,
    ):
        self.root = Path(root)
        self.role = role or HostRole()
        self._given = config
        self._discover = registry or discover
        self.clock: Clock = clock or SystemClock()
        self.seed = seed
        self.rng = random.Random(seed)
        self._env = env
        self._reload_interval = reload_interval
        self._grace = shutdown_grace
        self._transport = transport
        self._model_listeners = tuple(model_listeners)
        self.routes = RouteTable()
        self.directory = ChannelDirectory()
        self.providers = ProviderCache()
        # The embeddings models of models.yaml for the memory extension's recall, resolved on the gateway of the
        # moment (a reload of models.yaml applies to embedders already handed out).
        embeddings = GatewayEmbeddings(lambda: self.gateways.gateway)
        self.services = HostServices(runtimes=HostRuntimes(self), spawn=self._spawn, embeddings=embeddings)
        self.memory = HostMemory(self.root, self.clock)
        self._stack = AsyncExitStack()
        self._stop_requested = anyio.Event()
        self._resumed = anyio.Event()
        self._resuming = False
        self._stopping = False
        self._running = False
        self._reload_lock = anyio.Lock()
        self._classes: dict[str, tuple[object, ...]] = {}
        self._config: ConfigDir | None = None
        self._claim: DataDirClaim | None = None
        self._gateways: GatewaySet | None = None
        self._channels: ChannelSet | None = None
        self._host_plugins: HostPluginSet | None = None
        self._shared_parts: SharedParts | None = None
        self._tg: TaskGroup | None = None
        self.budget: RuntimeBudget | None = None  # the runtimes alive at once under the open-files limit
        self.heartbeats: HeartbeatService | None = None
        self.http = HttpIngress(HttpSettings())  # off until entered with the config's ``http`` settings
        self.observability: HostObservability | None = None  # metrics, usage, /readyz, the control socket
        self.fleet: Fleet | None = None  # with ``store: postgresql://...``: this host's part of the fleet

    # -- state ------------------------------------------------------------------------------------------

    @property
    def config(self) -> ConfigDir:
        """The config directory as last loaded."""
        assert self._config is not None, "enter the host first (async with Host(...))"
        return self._config

    @property
    def gateways(self) -> GatewaySet:
        """The model gateway and the profiles' model slots."""
        assert self._gateways is not None, "enter the host first"
        return self._gateways

    @property
    def channels(self) -> ChannelSet:
        """The channel supervisors."""
        assert self._channels is not None, "enter the host first"
        return self._channels

    @property
    def host_plugins(self) -> HostPluginSet:
        """The host plugins' supervisors."""
        assert self._host_plugins is not None, "enter the host first"
        return self._host_plugins

    @property
    def shared_parts(self) -> SharedParts:
        """What the host's runtimes share."""
        assert self._shared_parts is not None, "enter the host first"
        return self._shared_parts

    @property
    def phase(self) -> str:
        """``starting`` until every ready profile and its channels have started, then ``running``, then
        ``stopping``."""
        return "stopping" if self._stopping else "running" if self._running else "starting"

    def channel(self, sid: str) -> Any:
        """The running connection of ``platform:selfId``, if any."""
        return self.directory.connection(sid)

    def status(self) -> dict[str, Any]:
        """A JSON snapshot: profiles, routes and their runtimes, channels, the gateway (and in a fleet, this
        host's part of it: ``fleetHost``)."""
        return {
            "profiles": {p.id: p.state for p in self.config.profiles},
            "routes": self.role.runtimes() if self.role.runtimes is not None else self._routes_status(),
            "channels": self.channels.status(),
            "plugins": self.host_plugins.status(),
            "gateway": self.gateways.gateway.status(),
            "http": self.http.status(),
            **({"workers": self.role.workers()} if self.role.workers is not None else {}),
            **({"fleetHost": self.fleet.status()} if self.fleet is not None else {}),
        }

    @property
    def placement(self) -> RuntimePlacement:
        """Where this host's events go to their runtimes: the fleet's lease holders, or the role's placement."""
        return self.fleet.placement if self.fleet is not None else self.role.placement

    def _routes_status(self) -> dict[str, list[str]]:
        return {r.profile.id: sorted(str(k) for k in r.runtimes) for r in self.routes}

    def report(self) -> dict[str, Any]:
        """The report ``ishiki status`` prints: ``status()`` with the process, each profile's missing services and
        errors, the runtimes alive and the readiness (``ishiki_host.host.report``)."""
        assert self.observability is not None, "enter the host first"
        return self.observability.report()

    # -- entering and leaving ---------------------------------------------------------------------------

    async def __aenter__(self) -> Host:
        try:
            await self._start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _start(self) -> None:
        self._stack.enter_context(tuned_collector())
        limit = raise_open_files_limit()  # every live chat holds a file; said once: a second host finds it raised
        logger.log(logging.INFO if limit.raised else logging.DEBUG, "%s", limit)
        config = self._given if self._given is not None else await anyio.to_thread.run_sync(self._load)
        role = self.role
        if role.runs_channels:  # a worker's supervisor holds the lock for the whole host
            self._claim = claim_data_dir(config.host.data_dir)  # first: a second host must change nothing
        self._config = config
        host = config.host
        grace = self._grace if self._grace is not None else host.shutdown_grace_seconds
        observed = self.observability = HostObservability(self, host)
        self._stack.enter_context(observed.logs.installed())  # the log tail host plugins read, until the stop
        self._stack.enter_context(observed.activity.counting_errors())  # the report's errors of the last hour
        log_config_problems(config)
        listeners = (*observed.call_listeners(), *self._model_listeners)
        share = role.concurrency if role.share is not None else None
        self._gateways = GatewaySet(self.clock, self.seed, self._transport, self.root, listeners, share, role.slots)
        self._gateways.build(config)
        self.services.timezone = host.timezone
        await self.memory.open(host.data_dir, host.memory, self.services)
        refused = [e for e in config.host_errors if e.path == "store"]
        if refused:  # an operator who meant a fleet must not get a lone host on the files instead
            raise StoreError(f"the host does not start: {refused[0].describe()}")
        fleet = self.fleet = await open_fleet(host, self.clock)
        if fleet is not None:
            self._stack.push_async_callback(fleet.aclose)  # after the task group (entered below) is left
            if role.name != "host":
                raise RunError("store: postgresql runs one process per host; run more hosts rather than workers")
        if role.runs_runtimes:  # counted once what the host keeps open is open
            self.budget = RuntimeBudget.for_this_process()
            logger.debug("at most %d runtimes alive at once under the open-files limit", self.budget.room)
        self._shared_parts = SharedParts(
            clock=self.clock,
            config_dir=self.root,
            data_dir=host.data_dir,
            outlets=role.outlets or self.directory,
            models=self._gateways.live_model,
            services=self.services,
            fsync=host.fsync,
            seed=self.seed,
            shutdown_grace=grace,
            commands=builtin_commands(),
            turn_listeners=observed.turn_listeners(),
            syncer=observed.syncer(),
            channels=lambda: self.channels.status(),
        )
        if fleet is not None:
            self._shared_parts.logs = fleet.logs
            self._shared_parts.fence = fleet.fence
            directory = self.directory
            fleet.can_serve = lambda key: key.sid is None or directory.connection(key.sid) is not None
        if role.fetchers is not None:
            self._shared_parts.fetchers = role.fetchers
        tg = self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        if fleet is not None:
            await tg.start(fleet.run, self.routes)
        self._channels = ChannelSet(self, tg)
        self._host_plugins = HostPluginSet(self, tg)
        if role.runs_channels:
            self.http = HttpIngress(host.http)
            await tg.start(self.http.run)  # bound before any channel mounts on it
            await observed.start(tg, self._stack)
            await self._host_plugins.reconcile()  # after the HTTP server they mount on, before the channels
        for state in config.profiles:
            if role.runs_channels:  # a worker's profiles are its supervisor's: said once, there
                log_profile_state(state)
            if state.state == "ready" and state.profile is not None:
                await self._activate(state)
        if role.runs_channels:
            await self._channels.reconcile()
            self.heartbeats = await start_heartbeats(self, tg, role.beats)
        if role.runs_runtimes and fleet is None:  # a fleet's hosts take over what a dead host left (host.fleet)
            self._resuming = True
            tg.start_soon(self._resume_unfinished)
        interval = self._reload_interval if self._reload_interval is not None else host.reload_interval_seconds
        if interval > 0 and role.runs_channels:  # a worker reloads when its supervisor says so
            tg.start_soon(watch, self.clock, interval, self._snapshot, self.reload, await self._snapshot(), self._tick)
        self._running = True

    def _spawn(self, fn: Callable[[], Awaitable[object]], name: str) -> None:
        """Host-wide work of a plugin (``HostServices.spawn``), in the host's task group."""
        self._group.start_soon(run_logged, fn, name)

    def _load(self) -> ConfigDir:
        return load_config_dir(self.root, env=self._env, registry=self._discover())

    async def close(self) -> None:
        """Stop everything (idempotent): no more input, turns finish within the grace, logs close."""
        if self._stopping:
            return
        self._stopping = True
        self._stop_requested.set()
        if self.heartbeats is not None:
            self.heartbeats.stop()  # no beat starts on a runtime that is about to stop
        with anyio.CancelScope(shield=True):
            if self._resuming and self._shared_parts is not None:
                with anyio.move_on_after(self._shared_parts.shutdown_grace):
                    await self._resumed.wait()  # runtimes resumed at start get to finish what they owe, too
            async with anyio.create_task_group() as tg:
                for route in self.routes:
                    tg.start_soon(self._stop_route, route, "shutdown")
            if self._channels is not None:
                self._channels.stop_all()
            if self._host_plugins is not None:
                await self._host_plugins.aclose()  # their mounts are given back before the HTTP server stops
            if self._tg is not None:
                self._tg.cancel_scope.cancel()
        await self._stack.aclose()  # leaves the host's task group (entered at the same nesting level)
        with anyio.CancelScope(shield=True):
            await self.memory.aclose()
            if self._gateways is not None:
                await self._gateways.aclose()
            if self._claim is not None:
                self._claim.release()  # last: the next host may start once everything here is closed

    async def _stop_route(self, route: ProfileRoute, reason: str) -> None:
        try:
            await route.stop(reason)
        except Exception:
            logger.exception("stopping profile %s failed", route.profile.id)

    def request_stop(self, reason: str = "requested") -> None:
        """Ask the host to stop; ``wait_stop_requested`` returns (the owner then leaves the ``async with``)."""
        if not self._stop_requested.is_set():
            logger.info("stopping: %s", reason)
        self._stop_requested.set()

    async def wait_stop_requested(self) -> None:
        """Until ``request_stop`` (or ``close``) was called."""
        await self._stop_requested.wait()

    # -- profiles ---------------------------------------------------------------------------------------

    @property
    def _group(self) -> TaskGroup:
        assert self._tg is not None, "enter the host first"
        return self._tg

    async def _activate(self, state: ProfileState) -> None:
        profile = state.profile
        assert profile is not None
        config = self.config
        model = self.gateways.slot(profile)
        parts = profile_parts(profile, model, config.models, config.registry, self.providers)
        idle = config.host.runtime_idle_seconds
        route = ProfileRoute(parts, self.shared_parts, idle_seconds=idle, budget=self.budget)
        await self._group.start(route.run)
        self._classes[profile.id] = _classes(state, config.registry)
        old = self.routes.put(route)
        if old is not None:
            self._group.start_soon(self._stop_route, old, "reload")

    def deactivate(self, profile_id: str, reason: str) -> bool:
        """Take a profile out of service (its runtimes stop in the background); whether it was active."""
        route = self.routes.remove(profile_id)
        self._classes.pop(profile_id, None)
        if route is None:
            return False
        self._group.start_soon(self._stop_route, route, reason)
        return True

    async def reload(self) -> ReloadReport:
        """Load the config dir again and apply what changed (see ``ishiki_host.host.setup``)."""
        async with self._reload_lock:
            if self._stopping or self._channels is None:
                return ReloadReport()  # not started (yet), or stopping
            new = await anyio.to_thread.run_sync(self._load)
            await self.memory.poll()
            old, report = self.config, ReloadReport()
            log_config_problems(new, only_new_against=old)
            rebuilt = self.gateways.rebuild_if_changed(old, new)
            report.gateway_rebuilt = rebuilt
            self._config = new
            self._apply_host_settings(old, new)
            for state in new.profiles:
                await self._reload_profile(state, old, rebuilt, report)
            for pid in [r.profile.id for r in self.routes if new.profile(r.profile.id) is None]:
                if self.deactivate(pid, "removed"):
                    logger.info("profile %s was removed; its runtimes stop", pid)
                    report.stopped.append(pid)
            if self.role.runs_channels:
                await self.host_plugins.reconcile()
                await self.channels.reconcile()
            if self.heartbeats is not None:  # targets may have gained or lost their profile
                await self.heartbeats.poll(force=True)
            if self.role.after_reload is not None:
                await self.role.after_reload()
            return report

    def _apply_host_settings(self, old: ConfigDir, new: ConfigDir) -> None:
        """Settings of ishiki.yaml a running host can take (channels are reconciled separately)."""
        for route in self.routes:
            route.idle_seconds = new.host.runtime_idle_seconds
        fixed = (
            "data_dir", "fsync", "log_level", "log_format", "shutdown_grace_seconds", "reload_interval_seconds",
            "timezone", "http",
        )  # fmt: skip
        changed = [name for name in fixed if getattr(old.host, name) != getattr(new.host, name)]
        if changed:
            logger.warning("ishiki.yaml: %s take effect at the next start", ", ".join(changed))

    async def _reload_profile(self, state: ProfileState, old: ConfigDir, rebuilt: bool, report: ReloadReport) -> None:
        route = self.routes.get(state.id)
        previous = old.profile(state.id)
        if previous is None or previous.state != state.state or previous.errors != state.errors:
            log_profile_state(state)
        if state.state != "ready" or state.profile is None:
            if self.deactivate(state.id, "reload"):
                report.stopped.append(state.id)
            return
        changed = route is None or route.profile != state.profile
        changed = changed or self._classes.get(state.id) != _classes(state, self.config.registry)
        changed = changed or (rebuilt and self.gateways.resolution_changed(state.profile, old, self.config))
        if changed:
            await self._activate(state)
            report.activated.append(state.id)
            logger.info("profile %s (re)activated", state.id)

    async def _resume_unfinished(self) -> None:
        """Spawn the runtimes the host left without a clean stop, so they decide on what they owe now."""
        try:
            await resume_routes(list(self.routes), self.config.host.data_dir, self.role.owns)
        finally:
            self._resumed.set()

    async def _tick(self) -> None:
        """Every reload tick: sync ``heartbeats.json`` if it changed; write the usage counts when due."""
        if self.heartbeats is not None:
            await self.heartbeats.poll()
        if self.observability is not None:
            self.observability.tick()

    async def _snapshot(self) -> Snapshot:
        await self.memory.poll()  # each reload tick: skills are synced on their own, without a full reload
        waiting = any(p.state == "waiting" for p in self.config.profiles)
        return await anyio.to_thread.run_sync(lambda: snapshot(self.root, include_site=waiting))

    # -- input ------------------------------------------------------------------------------------------

    async def dispatch(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> Delivery:
        """Route ``event`` to its runtime and return once it is durable (``ChannelError``: not taken).

        What cannot be taken now but may be later (the host is stopping, the fact log cannot be written, the
        runtime stopped under us) is ``ChannelUnavailable``; a runtime that cannot start is a plain
        ``ChannelError`` (see ``ishiki_host.errors.ChannelError`` for what a channel does with each).
        """
        if self._stopping:
            raise ChannelUnavailable("the host is stopping; the event was not taken")
        if self.directory.is_echo(event):
            return Unrouted("echo")
        for _ in range(2):  # a reload may swap the route under us once
            route = self.routes.lookup(event.sid, event.channel_id)
            if route is None:
                logger.debug("no profile claims %s %s; event %s dropped", event.sid, event.channel_id, event.message_id)
                return Unrouted("unclaimed")
            try:
                return await self.placement.deliver(
                    route, route.key_for(event.sid, event.channel_id), event, attachments
                )
            except AgentStopped as exc:
                problem: Exception = exc
            except FactLogError as exc:
                raise ChannelUnavailable(f"event {event.message_id} was not taken for now: {exc}") from exc
            except RuntimeStartFailed as exc:
                logger.error("%s", exc)
                raise ChannelError(f"event {event.message_id} was not taken: {exc}") from exc
        raise ChannelUnavailable(f"event {event.message_id} was not taken: {problem}") from problem

    async def runtime_for(self, profile_id: str, sid: str | None = None, channel_id: str | None = None) -> AgentRuntime:
        """The runtime of a profile at an address (cross mode: the profile's one runtime), spawned if needed.

        Plugins reach a persona's runtime this way through ``HostServices.runtimes`` (heartbeats do).
        """
        route = self.routes.get(profile_id)
        if route is None:
            raise AgentStopped(f"profile {profile_id!r} is not active")
        if not self.role.runs_runtimes:
            raise AgentStopped(f"profile {profile_id!r}: its runtimes run on the worker processes, not here")
        if route.profile.mode == "cross":
            return await route.runtime(RuntimeKey.for_cross(profile_id))
        if sid is None or channel_id is None:
            raise ValueError(f"profile {profile_id!r} runs in channel mode: give sid and channel_id")
        return await route.runtime(route.key_for(sid, channel_id))


def _classes(state: ProfileState, registry: PluginRegistry) -> tuple[object, ...]:
    """The classes behind a profile's services (a reinstalled plugin gives new ones)."""
    return tuple(registry.plugin(name) for name in state.services)
