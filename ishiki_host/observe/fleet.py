"""The metrics of a host whose runtimes run in workers (``ishiki run --workers N``), summed into the supervisor's.

Each worker counts its own turns, tool calls, model calls, tokens and fsyncs (its ``HostMetrics``) and says
them in its answer to the supervisor's ``status`` (asked every 2 s, and at each scrape of ``/metrics``):

- ``CountsReporter`` (the worker's) answers with its counters and histograms as plain data, without the
  ``_created`` timestamps: all of them the first time, and afterwards only the series whose value changed
  since the report the supervisor holds (the request names the version it holds of this worker's life); when
  nothing was counted since, it does not even collect. A supervisor that missed a report (an answer lost with
  a link) holds an older version and gets everything again.
- ``WorkerCounts`` (the supervisor's) keeps each worker's counts by life (its pid) and sums them. A restarted
  worker counts from 0 again, so the counts of a life that ended are kept (``retired``) and added for good:
  the sums ``/metrics`` shows only grow, as one process's would. Letting the sum drop would not read as a
  counter reset to Prometheus: the other workers' counts go on, so the host's series would fall by one
  worker's share rather than to 0, and ``rate()`` would take the next scrape's whole value for new turns.
  What a dead life counted after its last report (2 s at most) is lost; nothing is counted twice.
- ``merged_metrics`` adds the sums to the supervisor's own families of the same names, so one page has one
  family per name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import Metric

if TYPE_CHECKING:
    from ishiki_host.jsontypes import Json

__all__ = ["CountFamily", "Counts", "CountsReporter", "WorkerCounts", "counts_from", "merged_metrics"]

_COUNTED = ("counter", "histogram")
_CREATED = "_created"
_SampleKey = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(slots=True)
class CountFamily:
    """One counter or histogram: its name, type and help, and its samples' values by sample name and labels."""

    name: str
    type: str
    help: str
    samples: dict[_SampleKey, float] = field(default_factory=dict)

    def add(self, other: CountFamily) -> None:
        """Add ``other``'s samples to these (a label set new here comes after the others, in its order)."""
        for key, value in other.samples.items():
            self.samples[key] = self.samples.get(key, 0.0) + value

    def empty(self) -> CountFamily:
        """The same family without samples."""
        return CountFamily(self.name, self.type, self.help)

    def to_json(self) -> dict[str, Json]:
        """The family as plain data (``counts_from`` reads it back)."""
        samples: list[Json] = [[name, dict(labels), value] for (name, labels), value in self.samples.items()]
        return {"name": self.name, "type": self.type, "help": self.help, "samples": samples}


Counts = dict[str, CountFamily]
"""Count families by name."""


def counts_of(metrics: Iterable[Metric]) -> Counts:
    """The counters and histograms among ``metrics`` (a registry's ``collect()``), without ``_created``."""
    counts: Counts = {}
    for metric in metrics:
        if metric.type in _COUNTED:
            family = counts[metric.name] = CountFamily(metric.name, metric.type, metric.documentation)
            for s in metric.samples:
                if not s.name.endswith(_CREATED):
                    family.samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return counts


def counts_from(data: object) -> Counts:
    """Families as ``CountFamily.to_json`` wrote them; ``ValueError`` naming what does not have their shape."""
    if not isinstance(data, list):
        raise ValueError(f"counts must be a list, not {type(data).__name__}")
    counts: Counts = {}
    for item in data:
        if not isinstance(item, dict):
            raise ValueError("each count family must be an object")
        name, kind, text, samples = item.get("name"), item.get("type"), item.get("help"), item.get("samples")
        if not (isinstance(name, str) and kind in _COUNTED and isinstance(text, str) and isinstance(samples, list)):
            raise ValueError(f"count family {name!r}: name, type (counter, histogram), help and samples are needed")
        family = counts[name] = CountFamily(name, str(kind), text)
        for sample in samples:
            family.samples[_sample_key(name, sample)] = _sample_value(name, sample)
    return counts


def _sample_key(family: str, sample: object) -> _SampleKey:
    if not (isinstance(sample, list) and len(sample) == 3 and isinstance(sample[0], str)):
        raise ValueError(f"count family {family}: each sample is [name, labels, value]")
    labels = sample[1]
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise ValueError(f"count family {family}: a sample's labels must map names to text")
    return sample[0], tuple(sorted((str(k), str(v)) for k, v in labels.items()))


def _sample_value(family: str, sample: list[object]) -> float:
    value = sample[2]
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ValueError(f"count family {family}: a sample's value must be a number")
    return float(value)


def add_counts(into: Counts, more: Counts) -> None:
    """Add ``more`` to ``into``, family by family."""
    for name, family in more.items():
        into.setdefault(name, family.empty()).add(family)


def _changed(before: Counts, now: Counts) -> Counts:
    """The series of ``now`` whose value is not the one in ``before``."""
    out: Counts = {}
    for name, family in now.items():
        old = before.get(name)
        for key, value in family.samples.items():
            if old is None or old.samples.get(key) != value:
                out.setdefault(name, family.empty()).samples[key] = value
    return out


class CountsReporter:
    """A worker's side (see the module docstring): ``collect()`` is its registry's, ``changes()`` a number that
    moves whenever something was counted. ``report`` may run in a worker thread (collecting a large registry
    takes milliseconds): one report at a time."""

    def __init__(self, collect: Callable[[], Iterable[Metric]], changes: Callable[[], int]):
        self._collect = collect
        self._changes = changes
        self._version = 0
        self._counted_at = -1
        self._sent: Counts = {}
        self._reporting = threading.Lock()

    def report(self, held: object) -> dict[str, Json]:
        """``{"version", "base", "families"}``: ``base`` is the version the families change (``None``: they are
        all of them); ``held`` is the version the supervisor holds of this life (``None`` for none)."""
        with self._reporting:
            return self._report(held)

    def _report(self, held: object) -> dict[str, Json]:
        delta = self._version > 0 and held == self._version
        changes = self._changes()
        if delta and changes == self._counted_at:
            return {"version": self._version, "base": self._version, "families": []}
        self._counted_at = changes  # read before collecting: what is counted meanwhile is in the next report
        now = counts_of(self._collect())
        families = _changed(self._sent, now) if delta else now
        base: Json = self._version if delta else None
        self._sent, self._version = now, self._version + 1
        return {"version": self._version, "base": base, "families": [f.to_json() for f in families.values()]}


@dataclass(slots=True)
class _Life:
    life: object
    version: int
    counts: Counts


class WorkerCounts:
    """The supervisor's side (see the module docstring): the counts of its workers, summed and kept monotonic
    across their restarts."""

    def __init__(self) -> None:
        self._lives: dict[int, _Life] = {}
        self._retired: Counts = {}

    def held(self) -> dict[str, Json]:
        """The version held of each worker's life, by its life (pid) as text: what ``status`` asks with."""
        return {str(held.life): held.version for held in self._lives.values()}

    def update(self, worker: int, life: object, report: object) -> None:
        """Take ``CountsReporter.report`` of worker ``worker`` in its life ``life`` (its pid): a new life retires
        the last one's counts; a report that does not follow the one held is dropped (the next one will, or
        will be whole); ``ValueError`` for one that does not have its shape."""
        version = report.get("version") if isinstance(report, Mapping) else None
        if not isinstance(report, Mapping) or not isinstance(version, int):
            raise ValueError("a counts report needs a version")
        base, families = report.get("base"), counts_from(report.get("families"))
        held = self._lives.get(worker)
        if held is not None and held.life != life:
            add_counts(self._retired, self._lives.pop(worker).counts)
            held = None
        if base is None and (held is None or version > held.version):
            self._lives[worker] = _Life(life, version, families)
        elif held is not None and base == held.version:
            for name, family in families.items():
                held.counts.setdefault(name, family.empty()).samples.update(family.samples)
            held.version = version

    def retire_all(self) -> None:
        """Keep every life's last counts for good (the workers are replaced: a change of their number)."""
        for held in self._lives.values():
            add_counts(self._retired, held.counts)
        self._lives.clear()

    def totals(self) -> Counts:
        """Every life's counts, summed."""
        total: Counts = {}
        add_counts(total, self._retired)
        for held in self._lives.values():
            add_counts(total, held.counts)
        return total


def merged_metrics(own: Iterable[Metric], extra: Counts) -> Iterator[Metric]:
    """``own`` families with ``extra``'s samples added to those of the same name (``_created`` stays this
    process's), then the families only ``extra`` has."""
    left = dict(extra)
    for metric in own:
        more = left.pop(metric.name, None)
        yield metric if more is None else _merged(metric, more)
    for family in left.values():
        yield _merged(Metric(family.name, family.help, family.type), family)


def _merged(metric: Metric, more: CountFamily) -> Metric:
    values: dict[_SampleKey, float] = {}
    for sample in metric.samples:
        values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    for key, value in more.samples.items():
        values[key] = values.get(key, 0.0) + value
    merged = Metric(metric.name, metric.documentation, metric.type, metric.unit)
    for (name, labels), value in values.items():
        merged.add_sample(name, dict(labels), value)
    return merged
