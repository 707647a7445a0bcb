"""Routes: which profile owns an input, and each profile's "fiber" of runtimes.

``RouteTable`` finds the owner of a channel: the candidate routes of ``sid = platform:selfId``, then the one
whose claims match the channel (activation guarantees that claims of active profiles never overlap).

``ProfileRoute`` is one active profile: its own task group, its shared parts (model, engine and extension
providers), and its runtimes by key (``profile/sid/channel``, or ``profile/main`` in cross mode), spawned on
first input. A runtime idle for ``idle_seconds`` (on the host's clock) is stopped and forgotten; the next
input respawns it from its fact log. Before that, a runtime idle for one reap interval (a minute at the
default) is cooled: its fact log forgets the recent entries it caches, most of what an idle runtime holds.
With a ``RuntimeBudget`` (the host's), a new runtime first waits for room under the open-files limit, which the
budget makes by stopping the least recently used idle runtimes of every route (``evict``), and a start that
fails for want of files is tried once more after that. Stopping the route stops every runtime with the grace
given.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import anyio

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.errors import AgentStopped, RuntimeStartFailed
from ishiki_host.runtime.runtime import AgentRuntime

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus

    from ishiki_host.channels.base import InboundAttachment
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.entries import Entry
    from ishiki_host.host.budget import Evict, RuntimeBudget
    from ishiki_host.runtime.parts import ProfileParts, SharedParts

__all__ = ["ProfileRoute", "RouteTable", "reap_interval"]

logger = logging.getLogger(__name__)

_DELIVERY_ATTEMPTS = 3  # a runtime stopping under a delivery is respawned; more than this is a real problem


def reap_interval(idle_seconds: float) -> float:
    """How often idle runtimes are looked for: a quarter of the idle time, between 0.5 s and 60 s."""
    return min(max(idle_seconds / 4, 0.5), 60.0)


class ProfileRoute:
    """One active profile and its runtimes (see the module docstring)."""

    def __init__(
        self,
        parts: ProfileParts,
        host: SharedParts,
        *,
        idle_seconds: float = 900.0,
        budget: RuntimeBudget | None = None,
    ):
        self.parts = parts
        self.host = host
        self.idle_seconds = idle_seconds
        self.spawned = 0
        # The keys this route spawned while the host's start-up resume scan may still look (``host.resume``):
        # kept until the scan is done with this route (``scanned``), so the set never grows with the host's life.
        self.ran: set[RuntimeKey] = set()
        self.scanned = False
        self.evicted = 0
        self._runtimes: dict[RuntimeKey, AgentRuntime] = {}
        self._spawning: dict[RuntimeKey, anyio.Event] = {}
        self._closing: set[AgentRuntime] = set()
        self._tg: TaskGroup | None = None
        self._stop = anyio.Event()
        self._closed = anyio.Event()
        self._grace = host.shutdown_grace
        self._reason = "shutdown"
        self._budget = budget

    @property
    def profile(self) -> Profile:
        """The profile."""
        return self.parts.profile

    @property
    def runtimes(self) -> dict[RuntimeKey, AgentRuntime]:
        """The live runtimes by key (a copy)."""
        return dict(self._runtimes)

    def key_for(self, sid: str, channel_id: str) -> RuntimeKey:
        """The key an input at ``sid``/``channel_id`` lands on."""
        return RuntimeKey.for_mode(self.profile.mode, self.profile.id, sid, channel_id)

    def claims(self, sid: str, channel_id: str) -> bool:
        """Whether this profile claims the channel."""
        return self.profile.claims.matches(sid, channel_id)

    # -- the fiber --------------------------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the fiber until ``stop``; its runtimes live in its task group."""
        leave = self._budget.add_source(self._evictable) if self._budget is not None else None
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._reap)
                task_status.started()
                await self._stop.wait()
                await self._stop_all()
                tg.cancel_scope.cancel()
        finally:
            if leave is not None:
                leave()
            self._closed.set()

    async def stop(self, reason: str = "shutdown", *, grace: float | None = None) -> None:
        """Stop every runtime (turns get ``grace`` seconds to finish) and end the fiber."""
        if self._tg is None:
            return
        self._reason = reason
        self._grace = self.host.shutdown_grace if grace is None else grace
        self._stop.set()
        await self._closed.wait()

    async def _stop_all(self) -> None:
        with anyio.CancelScope(shield=True):
            runtimes = list(self._runtimes.values())
            self._runtimes.clear()
            async with anyio.create_task_group() as tg:
                for runtime in runtimes:
                    tg.start_soon(self._stop_one, runtime, self._reason, self._grace)

    @property
    def closing(self) -> int:
        """How many runtimes are still stopping (evicted or reloaded, not yet closed)."""
        return len(self._closing)

    async def _stop_one(self, runtime: AgentRuntime, reason: str, grace: float) -> None:
        self._closing.add(runtime)
        try:
            await runtime.stop(reason, grace=grace)
        except Exception:
            logger.exception("stopping runtime %s failed", runtime.key)
        finally:
            self._closing.discard(runtime)

    # -- runtimes ---------------------------------------------------------------------------------------

    async def runtime(self, key: RuntimeKey) -> AgentRuntime:
        """The running runtime at ``key``, spawned (from its fact log) if there is none."""
        while True:
            if self._stop.is_set() or self._tg is None:
                raise AgentStopped(f"profile {self.profile.id!r} is not running")
            existing = self._runtimes.get(key)
            if existing is not None and existing.state == "ready":
                return existing
            spawning = self._spawning.get(key)
            if spawning is None:
                return await self._spawn(key)
            await spawning.wait()

    async def _spawn(self, key: RuntimeKey) -> AgentRuntime:
        assert self._tg is not None
        done = self._spawning[key] = anyio.Event()
        try:
            runtime = await self._start(key)
            self._runtimes[key] = runtime
            if not self.scanned:
                self.ran.add(key)
            self.spawned += 1
            return runtime
        finally:
            del self._spawning[key]
            done.set()

    async def _start(self, key: RuntimeKey) -> AgentRuntime:
        """A started runtime at ``key``, within the budget: tried once more if the process ran out of files."""
        assert self._tg is not None
        budget = self._budget
        for attempt in range(2):
            runtime = AgentRuntime(key, self.parts, self.host)
            if budget is not None:
                await budget.admit(runtime)
            try:
                await self._tg.start(self._serve, runtime)
            except RuntimeStartFailed as exc:
                if attempt == 0 and budget is not None and await budget.start_failed(exc):
                    continue
                raise
            finally:
                if budget is not None and runtime.state in ("new", "stopped"):  # cancelled before it ran, or failed
                    budget.released(runtime)
            return runtime
        raise AssertionError("unreachable")

    async def _serve(self, runtime: AgentRuntime, *, task_status: TaskStatus[None]) -> None:
        try:
            await runtime.run(task_status=task_status)
        finally:
            if self._runtimes.get(runtime.key) is runtime:
                del self._runtimes[runtime.key]
            if self._budget is not None:
                self._budget.released(runtime)

    async def deliver(
        self, key: RuntimeKey, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()
    ) -> tuple[AgentRuntime, Entry | None]:
        """Deliver ``event`` to the runtime at ``key`` (spawned if needed); retried if it stops meanwhile."""
        for attempt in range(_DELIVERY_ATTEMPTS):
            runtime = await self.runtime(key)
            try:
                return runtime, await runtime.deliver(event, attachments)
            except AgentStopped:
                if runtime.state in ("ready", "starting") or attempt == _DELIVERY_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    async def _reap(self) -> None:
        interval = reap_interval(self.idle_seconds)
        while True:
            await self.host.clock.sleep(interval)
            self.evict_idle()
            await self.cool_idle(interval)

    async def cool_idle(self, after: float) -> int:
        """Cool the runtimes idle for ``after`` seconds or more (``AgentRuntime.cool``); returns how many
        entries their logs gave back."""
        dropped = 0
        for runtime in list(self._runtimes.values()):  # a runtime may stop while another parks its log
            idle = runtime.idle_for()
            if idle is not None and idle >= after:
                dropped += await runtime.cool()
        return dropped

    def evict_idle(self) -> int:
        """Stop the runtimes idle for ``idle_seconds`` or more; returns how many."""
        count = 0
        for runtime in list(self._runtimes.values()):
            idle = runtime.idle_for()
            if idle is not None and idle >= self.idle_seconds and self._evict(runtime, "idle"):
                count += 1
        if count:
            logger.debug("profile %s: %d idle runtime(s) stopped", self.profile.id, count)
        return count

    def stop_runtime(self, key: RuntimeKey, reason: str) -> bool:
        """Stop the runtime at ``key`` now, idle or not (its host no longer serves it: a lost lease); whether
        there was one. The next input for the key respawns it from its fact log."""
        runtime = self._runtimes.get(key)
        return runtime is not None and self._evict(runtime, reason)

    def evict(self, runtime: AgentRuntime) -> bool:
        """Stop ``runtime`` (idle) to make room under the open-files limit; whether it was this route's to stop."""
        return self._evict(runtime, "open files")

    def _evict(self, runtime: AgentRuntime, reason: str) -> bool:
        if self._tg is None or self._runtimes.get(runtime.key) is not runtime:
            return False
        del self._runtimes[runtime.key]
        self._closing.add(runtime)  # counted as closing from now on, not once its stop task starts
        self._tg.start_soon(self._stop_one, runtime, reason, self.host.shutdown_grace)
        self.evicted += 1
        return True

    def _evictable(self) -> Iterator[tuple[AgentRuntime, Evict]]:
        """The live runtimes, each with how the budget stops it."""
        evict = self.evict
        return ((runtime, evict) for runtime in self._runtimes.values())


class RouteTable:
    """Active profile routes, looked up by ``sid`` then claims (see the module docstring)."""

    def __init__(self) -> None:
        self._routes: dict[str, ProfileRoute] = {}
        self._by_sid: dict[str, list[ProfileRoute]] = {}

    def __iter__(self) -> Iterator[ProfileRoute]:
        return iter(list(self._routes.values()))

    def __len__(self) -> int:
        return len(self._routes)

    def get(self, profile_id: str) -> ProfileRoute | None:
        """The route of a profile, if active."""
        return self._routes.get(profile_id)

    def put(self, route: ProfileRoute) -> ProfileRoute | None:
        """Add ``route`` (replacing the profile's old route at once); returns the old one, to be stopped."""
        old = self.remove(route.profile.id)
        self._routes[route.profile.id] = route
        for sid in route.profile.claims.by_sid:
            self._by_sid.setdefault(sid, []).append(route)
        return old

    def remove(self, profile_id: str) -> ProfileRoute | None:
        """Take a profile's route out of the table; returns it."""
        route = self._routes.pop(profile_id, None)
        if route is not None:
            for sid in route.profile.claims.by_sid:
                remaining = [r for r in self._by_sid.get(sid, ()) if r is not route]
                if remaining:
                    self._by_sid[sid] = remaining
                else:
                    self._by_sid.pop(sid, None)
        return route

    def lookup(self, sid: str, channel_id: str) -> ProfileRoute | None:
        """The route whose profile claims ``channel_id`` of ``sid``, if any."""
        for route in self._by_sid.get(sid, ()):
            if route.claims(sid, channel_id):
                return route
        return None

    def sids(self) -> set[str]:
        """Every ``platform:selfId`` some active profile claims."""
        return set(self._by_sid)
