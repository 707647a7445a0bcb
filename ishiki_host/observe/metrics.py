"""The host's Prometheus metrics, in a ``CollectorRegistry`` of its own.

One registry per ``HostMetrics``, never ``prometheus_client``'s process-wide one: two hosts in one process (and
every test) count their own, and nothing a library registers globally leaks into a host's page.

Counted as they happen, each in a few microseconds on the path of the event (child series are looked up once
per label set and kept, so a hot path does no label handling):

- ``ishiki_turns_total{profile,status}`` (``done``, ``failed``, ``aborted``) and
  ``ishiki_turn_duration_seconds{profile}``: at every turn's end (``turn_ended``, a turn listener);
- ``ishiki_tool_calls_total{profile,tool}``: the tool calls of each turn;
- ``ishiki_model_call_duration_seconds{model,outcome}`` (``outcome``: ``ok`` or the error kind) and
  ``ishiki_tokens_total{profile,model,kind}`` (``kind``: ``input``, ``output``): every model call
  (``model_call``, a gateway call listener; ``profile`` is that of the runtime the call was made for, empty
  for calls outside runtimes);
- ``ishiki_factlog_fsync_duration_seconds``: every fsync of a fact log (``timed_syncer``, timed in the
  worker thread that runs it, by the real clock: this is a measurement of the disk, not host logic).

Read from the host's state at scrape time (``ishiki_host.observe.state``, added with ``add_collector``):
profiles by state, runtimes alive, channels up, their restarts and errors, breaker states, scheduler queues.

A supervisor of ``ishiki run --workers N`` counts none of the first list itself (its workers run the turns):
each worker says its counts in ``counts_report`` (what changed since the supervisor's last report of them),
and the supervisor ``include``s their sums (``ishiki_host.observe.fleet``), added to its own series of the
same names at every render (``scrape`` first asks the workers for their counts now): one page, the host.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from ishiki_host.observe.fleet import Counts, CountsReporter, add_counts, merged_metrics
from ishiki_host.observe.owner import call_owner

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.factlog import Syncer
    from ishiki_host.gateway.gateway import ModelCallRecord
    from ishiki_host.jsontypes import Json
    from ishiki_host.plugins.runtime_api import TurnReport

__all__ = ["CONTENT_TYPE", "FSYNC_BUCKETS", "MODEL_CALL_BUCKETS", "TURN_BUCKETS", "HostMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""The media type of ``render()``: Prometheus's text format."""
TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
MODEL_CALL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 60.0, 120.0)
FSYNC_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

_Child = Callable[[float], None]  # a series' ``inc`` or ``observe``


class HostMetrics:
    """The metrics of one host (see the module docstring); ``render()`` is the page ``/metrics`` serves."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self._turns = Counter("ishiki_turns", "Turns that ended, by how", ["profile", "status"], registry=reg)
        self._turn_seconds = Histogram(
            "ishiki_turn_duration_seconds", "How long turns ran", ["profile"], buckets=TURN_BUCKETS, registry=reg
        )
        self._tools = Counter("ishiki_tool_calls", "Tool calls made by turns", ["profile", "tool"], registry=reg)
        self._call_seconds = Histogram(
            "ishiki_model_call_duration_seconds",
            "How long model calls took, by member and outcome (ok or the error kind)",
            ["model", "outcome"],
            buckets=MODEL_CALL_BUCKETS,
            registry=reg,
        )
        self._tokens = Counter(
            "ishiki_tokens", "Tokens of model calls, by profile and member", ["profile", "model", "kind"], registry=reg
        )
        self._fsync = Histogram(
            "ishiki_factlog_fsync_duration_seconds", "How long fsyncs of fact logs took", buckets=FSYNC_BUCKETS,
            registry=reg,
        )  # fmt: skip
        self._children: dict[tuple[object, ...], _Child] = {}
        self._included: list[tuple[Callable[[], Counts], Callable[[], Awaitable[None]]]] = []
        self._changes = 0  # moves at every count (read without a lock: a change missed is in the next report)
        counted = (self._turns, self._turn_seconds, self._tools, self._call_seconds, self._tokens, self._fsync)
        # only what is counted here (the state collectors read the host: never from the reporter's thread)
        self._reporter = CountsReporter(lambda: [m for c in counted for m in c.collect()], lambda: self._changes)

    def add_collector(self, collector: Collector) -> None:
        """Register ``collector`` (read at every scrape) in this host's registry."""
        self.registry.register(collector)

    def include(self, counts: Callable[[], Counts], refresh: Callable[[], Awaitable[None]]) -> None:
        """Add ``counts()`` (other processes' counters and histograms) to this page's series at every render;
        ``scrape`` awaits ``refresh()`` first."""
        self._included.append((counts, refresh))

    def counts_report(self, held: object) -> dict[str, Json]:
        """This host's counters and histograms, as a worker tells its supervisor (``CountsReporter.report``:
        the series changed since the version ``held``, or all of them)."""
        return self._reporter.report(held)

    def render(self) -> bytes:
        """Every metric in Prometheus's text format (``CONTENT_TYPE``), with the included counts."""
        return generate_latest(self if self._included else self.registry)

    async def scrape(self) -> bytes:
        """``render()`` once every included source has been refreshed (what ``GET /metrics`` answers)."""
        for _, refresh in self._included:
            await refresh()
        return self.render()

    def collect(self) -> Iterator[Metric]:
        """This registry's families with the included counts added (what ``render`` prints)."""
        extra: Counts = {}
        for counts, _ in self._included:
            add_counts(extra, counts())
        return merged_metrics(self.registry.collect(), extra)

    def turn_ended(self, key: RuntimeKey, report: TurnReport) -> None:
        """Count a turn's end, its duration and its tool calls (a turn listener)."""
        profile = key.profile
        self._changes += 1
        self._child(self._turns, "inc", profile, report.status)(1)
        if report.status != "dropped":
            self._child(self._turn_seconds, "observe", profile)(report.seconds)
        for tool in report.tools:
            self._child(self._tools, "inc", profile, tool)(1)

    def model_call(self, record: ModelCallRecord) -> None:
        """Time a model call and count its tokens (a gateway call listener)."""
        outcome = record.error_kind or "ok"
        self._changes += 1
        self._child(self._call_seconds, "observe", record.member, outcome)(record.latency_seconds)
        usage = record.usage
        if usage is None:
            return
        profile, _ = call_owner()
        if usage.input_tokens:
            self._child(self._tokens, "inc", profile, record.member, "input")(usage.input_tokens)
        if usage.output_tokens:
            self._child(self._tokens, "inc", profile, record.member, "output")(usage.output_tokens)

    def timed_syncer(self, syncer: Syncer) -> Syncer:
        """``syncer`` (``os.fsync``), its every call timed into the fsync histogram."""
        observe = self._fsync.observe

        def timed(fd: int) -> None:
            start = time.perf_counter()
            try:
                syncer(fd)
            finally:
                observe(time.perf_counter() - start)
                self._changes += 1

        return timed

    def _child(self, metric: Counter | Histogram, method: str, *labels: str) -> _Child:
        """The bound ``inc``/``observe`` of one series, made once per metric and label values."""
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = getattr(metric.labels(*labels), method)
        return child
