"""What one process does of a host's work: all of it, or one side of ``ishiki run --workers N``.

- ``host`` (the default): one process runs the channels, the HTTP ingress, the host plugins, the config watcher,
  the heartbeat scheduler and every runtime. ``after_reload``, when given, runs after each of its reloads
  (``ishiki run`` checks there whether ``workers`` asks for another shape).
- ``supervisor``: everything but the runtimes. It holds the data directory's lock, routes each event to its
  runtime key and hands it to ``placement`` (the worker that owns the key); beats run through ``beats`` (on the
  worker that owns the target). It spawns no runtime of its own. After each reload of its own it calls
  ``after_reload`` (the workers reload too); ``workers`` gives the workers' part of its status (each one's
  state, runtimes and gateway with its breakers), ``runtimes`` the live runtime keys by profile across them,
  ``views`` what its host plugins read of those runtimes (their logs and tools, answered by the workers).
- ``worker``: only runtimes (and the models, the memory database and the extensions they use). Its runtimes
  send through ``outlets`` (the supervisor's channel connections, over IPC) and fetch lazy attachments through
  ``fetchers``; at start it resumes only the unfinished runtimes it ``owns``; it reloads when the supervisor
  says so, and takes no lock (the supervisor holds it for the whole host). The workers together never have
  more calls in flight than each provider's ``max_concurrency``: with ``slots`` (``scheduler.across_workers:
  lease``) every call takes its slot from the supervisor's scheduler, so the limit and the call priority hold
  across the workers; with a ``share`` (``split``) each worker keeps an even part of the limit
  (``concurrency``), with no message per call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ishiki_host.host.placement import LocalPlacement, RuntimePlacement

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.gateway.scheduler import SlotSource
    from ishiki_host.heartbeat.scheduler import BeatRunner
    from ishiki_host.host.runtimeviews import RuntimeViews
    from ishiki_host.jsontypes import Json
    from ishiki_host.resources import AssetFetchers
    from ishiki_host.runtime.outbound import Outlets

__all__ = ["HostRole", "RoleName"]

RoleName = Literal["host", "supervisor", "worker"]


def _every_key(key: RuntimeKey) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class HostRole:
    """One process's share of a host's work (see the module docstring)."""

    name: RoleName = "host"
    placement: RuntimePlacement = field(default_factory=LocalPlacement)
    outlets: Outlets | None = None
    fetchers: AssetFetchers | None = None
    owns: Callable[[RuntimeKey], bool] = _every_key
    beats: BeatRunner | None = None
    after_reload: Callable[[], Awaitable[None]] | None = None
    workers: Callable[[], list[dict[str, Json]]] | None = None
    runtimes: Callable[[], dict[str, list[str]]] | None = None
    views: RuntimeViews | None = None
    share: tuple[int, int] | None = None
    slots: SlotSource | None = None

    def concurrency(self, limit: int) -> int:
        """This process's part of a provider's ``max_concurrency``: all of it, or for worker ``i`` of ``n`` an
        even split (the first ``limit % n`` workers take one more; at least one each)."""
        if self.share is None:
            return limit
        index, count = self.share
        return max(1, limit // count + (1 if index < limit % count else 0))

    @property
    def runs_channels(self) -> bool:
        """Whether this process runs the channels, the HTTP ingress, the host plugins and the config watcher."""
        return self.name != "worker"

    @property
    def runs_runtimes(self) -> bool:
        """Whether runtimes run in this process."""
        return self.name != "supervisor"
