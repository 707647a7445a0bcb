"""The host's observability, wired: its metrics, usage counts, answered-message line, its own HTTP routes and
its control socket (the parts are ``ishiki_host.observe``'s; docs/observability.md).

``HostObservability(host, settings)`` is made when the host starts, before its gateway and its runtimes'
shared parts, because both take what it gives:

- ``call_listeners()`` go on every gateway the host builds: the usage counts, and the metrics' model-call
  latency and tokens;
- ``turn_listeners()`` get every turn's report: the answered-message line, the tool counts, the metrics;
- ``syncer()`` is the fsync of every fact log: ``os.fsync``, timed into the metrics (``None`` without
  metrics: the fact log's own default, untimed);
- ``logs`` is the host's log tail (``HostLogTail``, what host plugins read as ``HostPluginContext.logs``): the
  host keeps it on the root logger from its start to its stop (``logs.installed()``), so it holds what every
  logger of the process said meanwhile (a second host in the same process too: see ``observe.logtail``);
- ``activity`` counts turns by minute and what is logged at ERROR over the last hour (``observe.activity``),
  for the report's ``activity`` block (the dashboard's overview).

Metrics exist only where they can be read: with ``http.listen`` set and ``http.metrics`` on (the default).
``start`` mounts ``/readyz`` and (with metrics) ``/metrics`` when the server listens, and starts the control
socket (``ishiki status``) in the host's task group. The usage counts are written in the
background after turns and on reload ticks (``tick``), at most every few seconds.
"""

from __future__ import annotations

import os
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from ishiki_host.host.report import host_report, host_state, readiness_problems
from ishiki_host.observe import (
    CONTROL_SOCKET,
    METRICS_PATH,
    READY_PATH,
    AnsweredLog,
    ControlServer,
    HostMetrics,
    RecentActivity,
    StateCollector,
    UsageRecorder,
    metrics_handler,
    ready_handler,
)
from ishiki_host.observe.logtail import HostLogTail

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.config.host import HostConfig
    from ishiki_host.core.factlog import Syncer
    from ishiki_host.gateway.gateway import CallListener
    from ishiki_host.host.host import Host
    from ishiki_host.ingress.types import HttpHandler
    from ishiki_host.plugins.runtime_api import TurnReport
    from ishiki_host.runtime.parts import TurnListener
    from ishiki_host.store.repos.usage import UsageRepo

__all__ = ["HostObservability"]


class HostObservability:
    """See the module docstring."""

    def __init__(self, host: Host, settings: HostConfig):
        self._host = host
        self._started_at = host.clock.monotonic()
        http = settings.http
        self.metrics = HostMetrics() if http.listen is not None and http.metrics else None
        if self.metrics is not None:
            self.metrics.add_collector(StateCollector(lambda: host_state(host)))
        self.usage = UsageRecorder(
            self._usage_repo,
            host.clock,
            lambda: host.services.timezone,
            lambda fn, name: host.services.spawn(fn, name=name),
        )
        self.answered = AnsweredLog(host.clock)
        self.logs = HostLogTail()
        self.activity = RecentActivity(host.clock)
        self.control = ControlServer(settings.data_dir / CONTROL_SOCKET, {"status": self.report})

    def report(self) -> dict[str, Any]:
        """The report ``ishiki status`` prints (``ishiki_host.host.report.host_report``), with the ``activity``
        of the last hour (turns per minute, failed turns, errors logged)."""
        report = host_report(self._host, self._started_at)
        report["activity"] = self.activity.snapshot()
        return report

    def call_listeners(self) -> tuple[CallListener, ...]:
        """What every gateway of the host reports its model calls to."""
        counted: tuple[CallListener, ...] = (self.usage.model_call,)
        return counted if self.metrics is None else (*counted, self.metrics.model_call)

    def turn_listeners(self) -> tuple[TurnListener, ...]:
        """What every runtime of the host reports its turns' ends to (the usage counts are written soon after)."""
        listeners: tuple[TurnListener, ...] = (self.answered, self.usage.turn_ended, self.activity)
        if self.metrics is not None:
            listeners = (*listeners, self.metrics.turn_ended)
        return (*listeners, self._flush_soon)

    def tick(self) -> None:
        """Every reload tick: write the usage counts of an idle host too."""
        self.usage.flush_soon()

    def syncer(self) -> Syncer | None:
        """The fsync of the host's fact logs (timed when there are metrics)."""
        return None if self.metrics is None else self.metrics.timed_syncer(os.fsync)

    async def start(self, tg: TaskGroup, stack: AsyncExitStack) -> None:
        """Mount the host's routes (held until ``stack`` closes) and start the control socket."""
        http = self._host.http
        if http.state == "running":
            routes: dict[str, HttpHandler] = {READY_PATH: ready_handler(lambda: readiness_problems(self._host))}
            if self.metrics is not None:
                routes[METRICS_PATH] = metrics_handler(self.metrics)
            for prefix, handler in routes.items():
                mount = http.mount(prefix)
                mount.route("/", handler, methods=("GET",))
                await stack.enter_async_context(mount)
        await tg.start(self.control.run)

    def _flush_soon(self, key: RuntimeKey, report: TurnReport) -> None:
        self.usage.flush_soon()

    def _usage_repo(self) -> UsageRepo | None:
        store = self._host.memory.store
        return store.usage if store is not None else None
