"""The host's model gateway and channel set, and how it reports the config it runs.

``GatewaySet`` builds the ``Gateway`` from ``models.yaml`` and the installed model APIs (with the host's
call listeners and the owner's), gives each profile a ``ModelSlot`` and other plugins live models by
reference, and rebuilds the gateway when ``models.yaml`` changes (retargeting the slots; the old gateway
closes with the host). A worker's gateways take their call slots from its role: its even ``share`` of each
``max_concurrency``, or its supervisor's scheduler (``slots``, the same source for every gateway built).

``ChannelSet`` starts the channels the active profiles' claims need: the console when some profile claims
``console:*`` (it needs no account), and each account of ``channels.<platform>.accounts`` in ``ishiki.yaml`` for
the other claimed platforms; on reload it stops, restarts (account changed) and starts supervisors to match;
supervisors start side by side, so an account whose platform cannot be reached does not delay the others. A
connection asking the host to stop (the console at the end of piped input) stops it only when no other channel
runs: a headless bot whose profile also claims the console keeps serving its other channels (Ctrl-D on the
console's terminal still stops the host).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.config.services import CHANNEL_GROUP, PROVIDER_GROUP, service_name
from ishiki_host.config.validation import with_defaults
from ishiki_host.errors import ConfigError
from ishiki_host.gateway.attribution import UsageListener
from ishiki_host.gateway.gateway import Gateway
from ishiki_host.gateway.scheduler import SchedulerConfig, SlotSource
from ishiki_host.host.connections import (
    ChannelContext,
    ChannelSpec,
    ChannelSupervisor,
    channel_rng,
    hook_prefix,
    runtime_command_names,
    state_dir,
)
from ishiki_host.host.models import FailoverNotices, ModelSlot, failover_policy

if TYPE_CHECKING:
    import httpx
    from anyio.abc import TaskGroup

    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.model import LanguageModel, ModelRequest, ModelResult, StreamEvent
    from ishiki_host.gateway.gateway import CallListener
    from ishiki_host.host.host import Host
    from ishiki_host.plugins.activation import ProfileState
    from ishiki_host.plugins.configdir import ConfigDir

__all__ = ["ChannelSet", "GatewaySet", "ReloadReport", "log_config_problems", "log_profile_state"]

logger = logging.getLogger("ishiki_host.host")

CONSOLE = "console"


class ReloadReport:
    """What a reload changed: profiles (re)activated, profiles stopped, whether the gateway was rebuilt."""

    def __init__(self) -> None:
        self.activated: list[str] = []
        self.stopped: list[str] = []
        self.gateway_rebuilt = False

    def __repr__(self) -> str:
        return f"<ReloadReport activated={self.activated} stopped={self.stopped} gateway={self.gateway_rebuilt}>"


class _LiveModel:
    """A model by reference on whatever gateway is current (plugins may keep it across reloads)."""

    def __init__(self, gateways: GatewaySet, ref: str):
        self._gateways = gateways
        self._ref = ref

    @property
    def name(self) -> str:
        return self._ref

    async def generate(self, request: ModelRequest) -> ModelResult:
        return await self._gateways.gateway.model(self._ref).generate(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        async for event in self._gateways.gateway.model(self._ref).stream(request):
            yield event


class GatewaySet:
    """The current gateway and the model slots of active profiles (see the module docstring)."""

    def __init__(
        self,
        clock: Clock,
        seed: int | None,
        transport: httpx.AsyncBaseTransport | None,
        root: Path,
        listeners: Sequence[CallListener] = (),
        share: Callable[[int], int] | None = None,
        slots: SlotSource | None = None,
    ):
        self._share = share  # ``max_concurrency`` -> this process's part of it (a worker's), else all of it
        self._slot_source = slots  # where calls take their slots (a worker's leases), else each gateway's scheduler
        self._clock = clock
        self._seed = seed
        self._transport = transport
        self._root = root
        self._listeners = tuple(listeners)  # the owner's, on every gateway built
        self._gateway: Gateway | None = None
        self._retired: list[Gateway] = []
        self._slots: dict[str, tuple[ModelSlot, Profile]] = {}

    @property
    def gateway(self) -> Gateway:
        """The current gateway."""
        assert self._gateway is not None, "build the gateway first"
        return self._gateway

    def build(self, config: ConfigDir) -> Gateway:
        """A new gateway for ``config`` (the old one is retired, closed with the host)."""
        apis = {}
        for provider in config.models.providers.values():
            cls = config.registry.plugin(service_name(PROVIDER_GROUP, provider.api))
            if cls is not None and provider.api not in apis:
                apis[provider.api] = cls()
        scheduler = SchedulerConfig(interactive_grace_seconds=config.host.scheduler.interactive_grace_seconds)
        models = config.models
        if self._share is not None:  # a worker's share of each provider's calls in flight
            share = self._share
            providers = {
                pid: dataclasses.replace(p, max_concurrency=share(p.max_concurrency))
                for pid, p in models.providers.items()
            }
            models = dataclasses.replace(models, providers=providers)
        gateway = Gateway(
            models,
            apis,
            clock=self._clock,
            seed=self._seed,
            scheduler=scheduler,
            config_dir=self._root,
            transport=self._transport,
            slots=self._slot_source,
        )
        gateway.add_listener(UsageListener())
        gateway.add_listener(FailoverNotices(gateway))
        for listener in self._listeners:
            gateway.add_listener(listener)
        if self._gateway is not None:
            self._retired.append(self._gateway)
        self._gateway = gateway
        return gateway

    def slot(self, profile: Profile) -> ModelSlot:
        """The model object of ``profile`` (a new slot; the profile's old one is forgotten)."""
        slot = ModelSlot(self.gateway.model(profile.model, failover=failover_policy(profile)))
        self._slots[profile.id] = (slot, profile)
        return slot

    def live_model(self, ref: str) -> LanguageModel:
        """A model by reference that always calls the current gateway (``ModelsConfigInvalid`` if unknown)."""
        self.gateway.model(ref)
        return _LiveModel(self, ref)

    def rebuild_if_changed(self, old: ConfigDir, new: ConfigDir) -> bool:
        """Rebuild the gateway when ``models.yaml`` (or the scheduler's grace) changed; whether it did."""
        same_apis = {p.api for p in old.models.providers.values()} == {p.api for p in new.models.providers.values()}
        same_grace = old.host.scheduler.interactive_grace_seconds == new.host.scheduler.interactive_grace_seconds
        if old.models == new.models and same_grace and same_apis:
            return False
        self.build(new)
        for pid, (slot, profile) in list(self._slots.items()):
            try:
                slot.target = self.gateway.model(profile.model, failover=failover_policy(profile))
            except ConfigError:
                self._slots.pop(pid)  # its model is gone: the profile is no longer ready and will be stopped
        logger.info("models.yaml changed: the model gateway was rebuilt")
        return True

    @staticmethod
    def resolution_changed(profile: Profile, old: ConfigDir, new: ConfigDir) -> bool:
        """Whether ``profile``'s model now stands for other members, or members with other specs."""

        def resolved(config: ConfigDir) -> tuple[Any, ...]:
            members = config.models.resolve(profile.model) or ()
            return tuple((m, config.models.spec(m)) for m in members)

        return resolved(old) != resolved(new)

    async def aclose(self) -> None:
        """Close the current and every retired gateway."""
        for gateway in [*self._retired, *([self._gateway] if self._gateway else [])]:
            await gateway.aclose()
        self._retired.clear()


class ChannelSet:
    """The channel supervisors of a host (see the module docstring)."""

    def __init__(self, host: Host, tg: TaskGroup):
        self.host = host
        self.tg = tg
        self._supervisors: dict[tuple[str, int], ChannelSupervisor] = {}
        self._finished: dict[tuple[str, int], ChannelSupervisor] = {}  # finished or failed: not started again
        self._warned: set[str] = set()

    def supervisors(self) -> list[ChannelSupervisor]:
        """The running supervisors."""
        return list(self._supervisors.values())

    def status(self) -> dict[str, Any]:
        """Each supervisor's state, restarts, errors and last error, and what its connection reports of itself
        (``connection``: its optional ``status()``, e.g. the Telegram channel's updates set aside). A channel
        that failed for good (a refused token) or finished stays listed, with its error, until its account
        changes."""
        supervisors = {**self._finished, **self._supervisors}
        return {
            s.spec.label: {
                "state": s.state,
                "sid": s.sid,
                "restarts": s.restarts,
                "errors": s.errors,
                "error": s.last_error,
                "connection": s.connection_status(),
            }
            for s in supervisors.values()
        }

    def not_up(self) -> list[str]:
        """Why the channels of the active profiles are not all up (``/readyz``): each account whose connection
        does not run, with its last error, and each claimed platform of which no account can start. A
        connection that finished (the console at the end of its input) ended on purpose and is not counted."""
        wanted = self._wanted()
        problems: list[str] = []
        for key, spec in sorted(wanted.items(), key=lambda item: item[0]):
            supervisor = self._supervisors.get(key) or self._finished.get(key)
            if supervisor is None:
                problems.append(f"channel {spec.label} has not started")
            elif supervisor.state not in ("running", "finished", "standby"):  # standby: another host runs it
                error = f": {supervisor.last_error}" if supervisor.last_error else ""
                problems.append(f"channel {spec.label} is {supervisor.state}{error}")
        for platform in sorted({sid.partition(":")[0] for sid in self.host.routes.sids()} - {p for p, _ in wanted}):
            problems.append(f"profiles claim {platform} channels, but no {platform} account can start (see the log)")
        return problems

    def stop_all(self) -> None:
        """Stop every supervisor."""
        for supervisor in self._supervisors.values():
            supervisor.stop()
        self._supervisors.clear()

    async def reconcile(self) -> None:
        """Start, restart and stop supervisors to match the active profiles' claims and ``ishiki.yaml``."""
        wanted = self._wanted()
        for key, supervisor in list(self._supervisors.items()):
            spec = wanted.get(key)
            if spec is None or spec.account != supervisor.spec.account or spec.provider is not supervisor.spec.provider:
                logger.info("channel %s stops (no longer needed, or its account changed)", supervisor.spec.label)
                supervisor.stop()
                del self._supervisors[key]
        starting: list[ChannelSupervisor] = []
        for key, spec in wanted.items():
            done = self._finished.get(key)
            if key in self._supervisors or (done is not None and done.spec.account == spec.account):
                continue
            supervisor = ChannelSupervisor(
                spec,
                self._context(spec),
                self.host.directory,
                self.host.clock,
                self.host.rng,
                on_finished=self._done,
                leases=self.host.fleet,
            )
            self._supervisors[key] = supervisor
            starting.append(supervisor)
        async with anyio.create_task_group() as tg:  # side by side: a channel slow to connect holds up no other
            for supervisor in starting:
                tg.start_soon(self.tg.start, supervisor.run)

    def _done(self, supervisor: ChannelSupervisor) -> None:
        key = (supervisor.spec.platform, supervisor.spec.index)
        if self._supervisors.get(key) is supervisor:
            del self._supervisors[key]
            self._finished[key] = supervisor

    def _context(self, spec: ChannelSpec) -> ChannelContext:
        host = self.host
        return ChannelContext(
            clock=host.clock,
            rng=channel_rng(host.seed, spec),
            state_dir=state_dir(host.config.host.data_dir, spec),
            fetchers=host.shared_parts.fetchers,
            logger=logging.getLogger(f"ishiki_host.channels.{spec.platform}"),
            dispatch=host.dispatch,
            request_stop=lambda reason, force: self._stop_for(spec, reason, force=force),
            http_mount=lambda: host.http.mount(hook_prefix(spec)),
            shared=host.services,
            command_names=lambda channel_id: runtime_command_names(
                host.routes, self._sid_of(spec), channel_id, host.shared_parts.commands
            ),
        )

    def _sid_of(self, spec: ChannelSpec) -> str | None:
        supervisor = self._supervisors.get((spec.platform, spec.index))
        return supervisor.sid if supervisor is not None else None

    def _stop_for(self, spec: ChannelSpec, reason: str, *, force: bool) -> bool:
        """A connection asks the host to stop (the console at the end of its input): the host stops when that
        channel is its only one, or ``force`` says so; otherwise the others run on (logged once: a channel
        finishes once)."""
        others = sorted(s.spec.label for s in self._supervisors.values() if s.spec is not spec)
        if force or not others:
            self.host.request_stop(reason)
            return True
        logger.info("%s: channel %s closes; %s run on", reason, spec.label, ", ".join(others))
        return False

    def _wanted(self) -> dict[tuple[str, int], ChannelSpec]:
        config = self.host.config
        platforms = sorted({sid.partition(":")[0] for sid in self.host.routes.sids()})
        wanted: dict[tuple[str, int], ChannelSpec] = {}
        for platform in platforms:
            name = service_name(CHANNEL_GROUP, platform)
            try:
                provider = self.host.providers.get(config.registry, name)
            except ConfigError as exc:
                self._warn_once(name, f"channel {platform} cannot start: {exc}")
                continue
            accounts = list(config.host.channels.get(platform, ()))
            if platform == CONSOLE and not accounts:
                accounts = [with_defaults(getattr(provider, "config_schema", {}), {})]
            if not accounts:
                self._warn_once(
                    platform,
                    f"profiles claim {platform} channels, but ishiki.yaml has no channels.{platform}.accounts",
                )
            for index, account in enumerate(accounts):
                wanted[(platform, index)] = ChannelSpec(platform, index, account, provider)
        return wanted

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning("%s", message)


def log_config_problems(config: ConfigDir, *, only_new_against: ConfigDir | None = None) -> None:
    """Log the host, models and plugin errors of ``config`` (on reload: only those that are new)."""
    seen: set[str] = set()
    if only_new_against is not None:
        old = only_new_against
        seen = {e.describe() for e in (*old.host_errors, *old.models_errors)}
        seen |= {r.as_error().describe() for r in old.registry.errors}
    for error in (*config.host_errors, *config.models_errors, *(r.as_error() for r in config.registry.errors)):
        if error.describe() not in seen:
            logger.error("%s", error.describe())


def log_profile_state(state: ProfileState) -> None:
    """One line for the profile's state, then one per error."""
    if state.state == "ready":
        logger.info("profile %s is ready", state.id)
        return
    if state.state == "disabled":
        logger.info("profile %s is disabled", state.id)
        return
    why = {"waiting": f"waits for {', '.join(state.missing)}", "invalid": "is invalid", "skipped": "is skipped"}
    level = logging.ERROR if state.state == "invalid" else logging.WARNING
    logger.log(level, "profile %s %s", state.id, why.get(state.state, state.state))
    for error in state.errors:
        logger.log(level, "  %s", error.describe())
