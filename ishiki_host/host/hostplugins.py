"""The host's side of host plugins (group ``ishiki.host``): their context, their supervision, and the set the
host starts, reloads and stops (the contract is ``ishiki_host.plugins.hostplugin``).

``HostPluginSupervisor`` runs one plugin as ``ChannelSupervisor`` runs a connection: ``create`` an instance,
``tg.start`` its ``run`` (readiness within ``start_timeout``), restart it after a back-off when it crashes
(doubling from 1 s to 60 s, jittered, on the host's clock). A fatal error (``HostPluginError`` whose ``fatal``
is true, a fatal ``ChannelError`` such as ``IngressError``, a ``ConfigError``) is logged once without a
traceback and the plugin stays stopped; a passing one (``HostPluginUnavailable``) is one line and a restart;
anything else is logged with its traceback and restarted. A ``run`` that returns has finished.

``HostPluginSet`` starts the plugins of ``plugins`` in ``ishiki.yaml`` side by side, and on reload stops
those removed and restarts those whose block (or installed class) changed. Each stop is awaited before its
plugin starts again or the host's HTTP server stops, so a plugin's mount is always given back first. A plugin
that failed or finished stays listed, with its error, until its block changes.

What a context reads of the host is read when asked, never copied at the plugin's start: the runtimes alive
(``live_runtime``: a runtime of an active profile whose state is ``ready``; their logs and tools through the
role's ``views``, the workers' under ``--workers N``, else ``LocalViews``), the heartbeats (``None`` until the
host's heartbeat service runs, which starts just after the host plugins, and on a host without one), DM
pairing (over the memory database's pairing tables, ``None`` without one), the log tail, and the entry points
of the config directory as last loaded.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.addresses.keys import escape_segment
from ishiki_host.config.services import HOST_GROUP, service_name
from ishiki_host.errors import ChannelError, ConfigError, HostPluginError, HostPluginUnavailable, IngressError
from ishiki_host.heartbeat.admin import admin_for
from ishiki_host.host.connections import STABLE_SECONDS, START_TIMEOUT, backoff_delay, single_error
from ishiki_host.host.report import profile_statuses
from ishiki_host.host.runtimeviews import LocalViews, live_runtime
from ishiki_host.plugins.hostplugin import RESERVED_PREFIXES

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus

    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.config.models import ModelsConfig
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.heartbeat.service import HeartbeatService
    from ishiki_host.host.host import Host
    from ishiki_host.host.runtimeviews import RuntimeViews
    from ishiki_host.ingress.types import HttpMount
    from ishiki_host.jsontypes import Json
    from ishiki_host.plugins.hostplugin import (
        HeartbeatAdmin,
        HostPluginContext,
        HostPluginInstance,
        InstalledPlugin,
        LogTail,
        PairingAdmin,
        ProfileStatus,
        RuntimeLogView,
    )
    from ishiki_host.plugins.runtime_api import RuntimeContext
    from ishiki_host.plugins.services import HostServices
    from ishiki_host.runtime.runtime import AgentRuntime
    from ishiki_host.store.repos.pairing import PairedSender, PairingRepo, PairingRequest

__all__ = [
    "STOP_SECONDS",
    "HostPluginContextImpl",
    "HostPluginSet",
    "HostPluginSupervisor",
    "StorePairingAdmin",
]

logger = logging.getLogger("ishiki_host.hostplugins")

STOP_SECONDS = 10.0
"""How long a stopping plugin may take to give back its mount before the host goes on without waiting."""


class HostPluginContextImpl:
    """The ``HostPluginContext`` one plugin is created with (documented there); the host gives it what each
    member reads, never itself."""

    def __init__(
        self,
        *,
        name: str,
        clock: Clock,
        state_dir: Path,
        services: HostServices,
        http_mount: Callable[[str], HttpMount],
        status: Callable[[], Mapping[str, Json]],
        profiles: Callable[[], tuple[ProfileStatus, ...]],
        request_reload: Callable[[str], None],
        runtime: Callable[[RuntimeKey], AgentRuntime | None],
        views: RuntimeViews,
        heartbeats: Callable[[], HeartbeatAdmin | None],
        logs: LogTail,
        installed: Callable[[], tuple[InstalledPlugin, ...]],
        models: Callable[[], ModelsConfig],
    ):
        self._models = models
        self._runtime = runtime
        self._views = views
        self._heartbeats = heartbeats
        self._logs = logs
        self._installed = installed
        self._name = name
        self._clock = clock
        self._state_dir = state_dir
        self._services = services
        self._http_mount = http_mount
        self._status = status
        self._profiles = profiles
        self._request_reload = request_reload
        self._logger = logging.getLogger(f"ishiki_host.hostplugin.{name}")

    @property
    def name(self) -> str:
        """The plugin's entry-point name."""
        return self._name

    @property
    def clock(self) -> Clock:
        """The host's clock."""
        return self._clock

    @property
    def logger(self) -> logging.Logger:
        """The plugin's logger."""
        return self._logger

    @property
    def state_dir(self) -> Path:
        """``<data_dir>/plugins/<name>``, created on first access."""
        self._state_dir.mkdir(parents=True, exist_ok=True)
        return self._state_dir

    @property
    def services(self) -> HostServices:
        """The host's shared services."""
        return self._services

    def http_mount(self) -> HttpMount:
        """A mount at ``/<name>``; ``IngressError`` for a name whose path is the host's own."""
        prefix = f"/{self._name}"
        if prefix in RESERVED_PREFIXES:
            raise IngressError(f"cannot serve {prefix}: the host serves that path itself")
        return self._http_mount(prefix)

    def status(self) -> Mapping[str, Json]:
        """The host's report (``ishiki status --json``)."""
        return self._status()

    def profiles(self) -> tuple[ProfileStatus, ...]:
        """Every profile directory and its runtimes alive."""
        return self._profiles()

    def request_reload(self) -> None:
        """Ask the host for a reload in its own task."""
        self._request_reload(self._name)

    def runtime(self, key: RuntimeKey) -> RuntimeContext | None:
        """The live runtime ``key`` of this process as its plugins see it, or ``None``; never spawns one."""
        runtime = self._runtime(key)
        return runtime.context if runtime is not None else None

    async def runtime_log(self, key: RuntimeKey) -> RuntimeLogView | None:
        """The live runtime's fact log, read-only, wherever it runs; ``None`` when it is not running."""
        return await self._views.log(key)

    async def tools(self, key: RuntimeKey) -> Sequence[Tool] | None:
        """What ``/tools`` of the live runtime ``key`` lists, or ``None`` when it is not running."""
        return await self._views.tools(key)

    @property
    def heartbeats(self) -> HeartbeatAdmin | None:
        """The host's heartbeats, or ``None`` while it runs none."""
        return self._heartbeats()

    @property
    def pairing(self) -> PairingAdmin | None:
        """DM pairing on the host's memory database, or ``None`` without one."""
        store = self._services.memory
        return None if store is None else StorePairingAdmin(store.pairing)

    @property
    def logs(self) -> LogTail:
        """The host's log tail."""
        return self._logs

    def installed(self) -> tuple[InstalledPlugin, ...]:
        """The entry points of the registry the config directory was last loaded with."""
        return self._installed()

    def models(self) -> ModelsConfig:
        """The current ``models.yaml``, credentials hidden."""
        return self._models().redacted()


class StorePairingAdmin:
    """The ``PairingAdmin`` of a host plugin over the memory database's pairing repository: the repository's
    own writes move its approvals' generation, so the host's next admission of that sender sees the change."""

    def __init__(self, repo: PairingRepo):
        self._repo = repo

    async def requests(self) -> list[PairingRequest]:
        """The open requests, oldest first."""
        return await self._repo.requests()

    async def approved(self) -> list[PairedSender]:
        """Every approval, by profile then sender."""
        return await self._repo.all_approved()

    async def approve(self, code: str, level: TrustLevel) -> PairedSender:
        """Approve ``code`` at ``level``; ``PairingCodeError`` for a wrong, used or expired code."""
        return await self._repo.approve(code, level)

    async def revoke(self, profile: str, sender: str) -> PairedSender | None:
        """Remove an approval; the one removed, or ``None``."""
        return await self._repo.revoke(profile, sender)


class HostPluginSupervisor:
    """Runs and restarts one host plugin (see the module docstring)."""

    def __init__(
        self,
        name: str,
        config: Mapping[str, Any],
        provider: Any,
        context: HostPluginContextImpl,
        clock: Clock,
        rng: random.Random,
        *,
        start_timeout: float = START_TIMEOUT,
    ):
        self.name = name
        self.config = config
        self.provider = provider
        self.context = context
        self.clock = clock
        self.rng = rng
        self.start_timeout = start_timeout
        self.scope = anyio.CancelScope()
        self.ended = anyio.Event()
        self.instance: HostPluginInstance | None = None
        self.state = "new"
        self.restarts = 0
        self.errors = 0  # lives of the plugin that ended in an exception
        self.last_error: str | None = None

    def stop(self) -> None:
        """Stop the plugin (and any restart); ``ended`` is set once its ``run`` has returned."""
        self.scope.cancel()

    def status(self) -> dict[str, Json]:
        """``state``, ``restarts``, ``errors`` and the last ``error`` (``Host.status()["plugins"][name]``)."""
        return {"state": self.state, "restarts": self.restarts, "errors": self.errors, "error": self.last_error}

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until stopped, finished or failed for good; ready once the first life is up (or has failed)."""
        reported = False

        def report() -> None:
            nonlocal reported
            if not reported:
                reported = True
                task_status.started()

        try:
            with self.scope:
                await self._lives(report)
            report()
        finally:
            if self.state in ("running", "waiting", "crashed", "new"):
                self.state = "stopped"
            self.ended.set()

    async def _lives(self, report: Callable[[], None]) -> None:
        attempt = 0
        while True:
            started = await self._attempt(report)
            report()
            if self.state in ("finished", "failed"):
                return
            if started is not None and self.clock.monotonic() - started >= STABLE_SECONDS:
                attempt = 0
            delay = backoff_delay(attempt, self.rng)
            attempt += 1
            self.restarts += 1
            logger.warning("host plugin %s is down (%s); restarting in %.1f s", self.name, self.last_error, delay)
            self.state = "waiting"
            await self.clock.sleep(delay)

    async def _attempt(self, report: Callable[[], None]) -> float | None:
        """One life of the plugin; returns when it started (``None`` if it never did)."""
        started: float | None = None
        try:
            instance = self.instance = self.provider.create(self.context, self.config)
            async with anyio.create_task_group() as tg:
                with anyio.move_on_after(self.start_timeout) as starting:
                    await tg.start(instance.run)
                if starting.cancelled_caught:
                    raise HostPluginUnavailable(f"not ready within {self.start_timeout:g} s")
                started = self.clock.monotonic()
                self.state = "running"
                logger.info("host plugin %s is up", self.name)
                report()
        except Exception as exc:
            self._failed(single_error(exc))
        else:
            self.state = "finished"
            logger.info("host plugin %s finished", self.name)
        return started

    def _failed(self, error: BaseException) -> None:
        self.errors += 1
        self.last_error = f"{type(error).__name__}: {error}"
        if isinstance(error, ConfigError) or (isinstance(error, HostPluginError | ChannelError) and error.fatal):
            self.state = "failed"  # the operator's to fix: no restart loop
            logger.error("host plugin %s failed: %s (not restarted)", self.name, self.last_error)
        elif isinstance(error, HostPluginError | ChannelError):
            self.state = "crashed"  # a passing trouble the plugin explained: the restart line says it
        else:
            self.state = "crashed"
            logger.error("host plugin %s crashed", self.name, exc_info=error)


class HostPluginSet:
    """The host plugins of a host (see the module docstring)."""

    def __init__(self, host: Host, tg: TaskGroup):
        self.host = host
        self.tg = tg
        self._supervisors: dict[str, HostPluginSupervisor] = {}
        self._warned: set[str] = set()
        self._admin: tuple[HeartbeatService, HeartbeatAdmin] | None = None

    def status(self) -> dict[str, Json]:
        """Each plugin's supervisor state, restarts, errors and last error, by name."""
        return {name: s.status() for name, s in sorted(self._supervisors.items())}

    def supervisor(self, name: str) -> HostPluginSupervisor | None:
        """The supervisor of plugin ``name``, if it was started."""
        return self._supervisors.get(name)

    async def reconcile(self) -> None:
        """Stop, restart and start plugins to match ``plugins`` of ``ishiki.yaml`` (stops awaited first)."""
        wanted = self._wanted()
        stopping = []
        for name, supervisor in list(self._supervisors.items()):
            now = wanted.get(name)
            if now is None or now != (supervisor.config, supervisor.provider):
                logger.info("host plugin %s stops (removed from ishiki.yaml, or its block changed)", name)
                stopping.append(self._supervisors.pop(name))
        await _stopped(stopping)
        starting = []
        for name, (config, provider) in wanted.items():
            if name not in self._supervisors:
                self._supervisors[name] = supervisor = self._supervisor(name, config, provider)
                starting.append(supervisor)
        async with anyio.create_task_group() as tg:  # side by side: a plugin slow to start holds up no other
            for supervisor in starting:
                tg.start_soon(self.tg.start, supervisor.run)

    async def aclose(self) -> None:
        """Stop every plugin and wait (at most ``STOP_SECONDS``) until each has given back what it holds."""
        supervisors = list(self._supervisors.values())
        self._supervisors.clear()
        await _stopped(supervisors)

    def _wanted(self) -> dict[str, tuple[Mapping[str, Any], Any]]:
        config = self.host.config
        wanted: dict[str, tuple[Mapping[str, Any], Any]] = {}
        for name, block in config.host.plugins.items():
            try:
                wanted[name] = (block, self.host.providers.get(config.registry, service_name(HOST_GROUP, name)))
            except ConfigError as exc:  # ``ishiki.yaml`` was checked against another registry (a test's)
                if name not in self._warned:
                    self._warned.add(name)
                    logger.warning("host plugin %s cannot start: %s", name, exc)
        return wanted

    def _supervisor(self, name: str, config: Mapping[str, Any], provider: Any) -> HostPluginSupervisor:
        host = self.host
        observed = host.observability
        assert observed is not None, "the host's observability is made before its plugins start"
        context = HostPluginContextImpl(
            name=name,
            clock=host.clock,
            state_dir=Path(host.config.host.data_dir, "plugins", escape_segment(name)),
            services=host.services,
            http_mount=host.http.mount,
            status=host.report,
            profiles=lambda: profile_statuses(host),
            request_reload=self._reload_for,
            runtime=lambda key: live_runtime(host, key),
            views=host.role.views or LocalViews(host),
            heartbeats=self._heartbeat_admin,
            logs=observed.logs,
            installed=lambda: host.config.registry.installed(),
            models=lambda: host.gateways.gateway.config,
        )
        rng = random.Random(None if host.seed is None else f"{host.seed}/plugin/{name}")
        return HostPluginSupervisor(name, config, provider, context, host.clock, rng)

    def _heartbeat_admin(self) -> HeartbeatAdmin | None:
        """One admin over the host's heartbeat service, made once the service runs."""
        service = self.host.heartbeats
        if service is None:
            return None
        if self._admin is None or self._admin[0] is not service:
            self._admin = (service, admin_for(service))
        return self._admin[1]

    def _reload_for(self, name: str) -> None:
        logger.info("host plugin %s asks for a reload", name)
        self.host.services.spawn(self.host.reload, name=f"reload asked by host plugin {name}")


async def _stopped(supervisors: list[HostPluginSupervisor]) -> None:
    """Stop ``supervisors`` and wait until their ``run`` returned, at most ``STOP_SECONDS`` (real time)."""
    for supervisor in supervisors:
        supervisor.stop()
    with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_SECONDS):
        for supervisor in supervisors:
            await supervisor.ended.wait()


if TYPE_CHECKING:
    _CONTRACT: type[HostPluginContext] = HostPluginContextImpl  # mypy holds the context to its contract
    _PAIRING: type[PairingAdmin] = StorePairingAdmin
