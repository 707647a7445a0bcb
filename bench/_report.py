"""What every bench script reports through: figures, timing helpers, the common command line and the table.

A script measures, then reports each result as a :class:`Figure`: the samples of several runs (one value per
run) and, where there is one, the samples of its baseline measured in the same process. The figure's value is
the median of its runs, its spread the lowest and highest run (min–max: the runs are few, 3 to 21, so
quartiles would mean little), and its ratio ``median / median(baseline)``. When the runs are paired (run *i* of
the figure and run *i* of the baseline measured back to back) the ratio is the median of the per-run ratios and
its spread their min–max, so drift between runs cancels out. A target (``"<= 2"``) applies to the ratio, or to
the median when there is no baseline; ``"~1"`` is shown but not judged.

A script is a ``measure(bench)`` function (sync or async) handed to :func:`run`::

    def measure(bench: Bench) -> None:
        runs = bench.runs(quick=3, full=7)
        bench.add("parse", "s", time_calls(parse, runs), baseline="json.loads", baseline_samples=...)

    def main(argv: list[str] | None = None) -> int:
        return run(measure, __doc__, argv)

``python bench/<name>.py [--quick] [--runs N] [--json PATH]`` then prints its figures as a table and, with
``--json``, writes them for ``python -m bench`` (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import operator
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from _table import missed_line, render_table

__all__ = [
    "Bench",
    "Figure",
    "Target",
    "add_memory_dir_option",
    "figures_from_dict",
    "run",
    "time_calls",
    "time_calls_async",
]

Direction = Literal["lower", "higher"]
TARGET = re.compile(r"^\s*(<=|>=|<|>|~)\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*$")
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Target:
    """A bound on a figure's ratio (or median): ``<= 2``, ``< 3``, ``>= 0.8``, ``> 1``, or ``~1`` (not judged)."""

    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Target:
        """The target written as ``text``; a ValueError naming it when it is not one."""
        match = TARGET.match(text)
        if match is None:
            raise ValueError(f"target {text!r}: expected '<= N', '< N', '>= N', '> N' or '~N'")
        return cls(match.group(1), float(match.group(2)))

    def met(self, value: float) -> bool | None:
        """Whether ``value`` meets the target; None for an informative ``~`` target."""
        compare = COMPARISONS.get(self.op)
        return None if compare is None else compare(value, self.value)

    def __str__(self) -> str:
        number = f"{self.value:g}"
        return f"~{number}" if self.op == "~" else f"{self.op} {number}"


def _samples(values: Iterable[float], what: str) -> tuple[float, ...]:
    samples = tuple(float(v) for v in values)
    if any(not math.isfinite(v) for v in samples):
        raise ValueError(f"{what}: samples must be finite numbers, got {samples}")
    return samples


@dataclass(frozen=True)
class Figure:
    """One measured figure: its runs, and its baseline's runs from the same process."""

    name: str
    unit: str
    samples: Sequence[float]
    baseline: str | None = None
    baseline_samples: Sequence[float] = ()
    paired: bool = False
    direction: Direction = "lower"
    target: str | None = None
    notes: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples", _samples(self.samples, self.name))
        object.__setattr__(self, "baseline_samples", _samples(self.baseline_samples, f"{self.name} baseline"))
        if not self.samples:
            raise ValueError(f"{self.name}: no samples")
        if (self.baseline is None) != (not self.baseline_samples):
            raise ValueError(f"{self.name}: a baseline needs both a name and samples")
        if self.paired and len(self.samples) != len(self.baseline_samples):
            raise ValueError(f"{self.name}: paired runs need as many baseline samples as samples")
        if self.baseline_samples and statistics.median(self.baseline_samples) == 0:
            raise ValueError(f"{self.name}: the baseline's median is 0, so there is no ratio")
        if self.direction not in ("lower", "higher"):
            raise ValueError(f"{self.name}: direction must be 'lower' or 'higher', got {self.direction!r}")
        if self.target is not None:
            Target.parse(self.target)

    @property
    def median(self) -> float:
        """The median of the runs."""
        return statistics.median(self.samples)

    @property
    def spread(self) -> tuple[float, float]:
        """The lowest and the highest run."""
        return min(self.samples), max(self.samples)

    @property
    def baseline_median(self) -> float | None:
        """The median of the baseline's runs, if there is a baseline."""
        return statistics.median(self.baseline_samples) if self.baseline_samples else None

    @property
    def run_ratios(self) -> tuple[float, ...]:
        """Run *i* over baseline run *i*, when the runs are paired; else empty."""
        if not self.paired:
            return ()
        return tuple(s / b for s, b in zip(self.samples, self.baseline_samples, strict=True))

    @property
    def ratio(self) -> float | None:
        """The figure over its baseline (median of run ratios when paired, else ratio of medians)."""
        if self.run_ratios:
            return statistics.median(self.run_ratios)
        base = self.baseline_median
        return None if base is None else self.median / base

    @property
    def ratio_spread(self) -> tuple[float, float] | None:
        """The lowest and highest per-run ratio, when the runs are paired."""
        ratios = self.run_ratios
        return (min(ratios), max(ratios)) if ratios else None

    @property
    def met(self) -> bool | None:
        """Whether the target is met (on the ratio, or on the median without a baseline); None if not judged."""
        if self.target is None:
            return None
        value = self.ratio if self.ratio is not None else self.median
        return Target.parse(self.target).met(value)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the inputs, and the computed median, spread and ratio for readers of the file."""
        low, high = self.spread
        baseline = None
        if self.baseline is not None:
            values = self.baseline_samples
            baseline = {"name": self.baseline, "samples": list(values), "median": self.baseline_median,
                        "min": min(values), "max": max(values)}  # fmt: skip
        ratio_spread = self.ratio_spread
        return {
            "name": self.name,
            "unit": self.unit,
            "direction": self.direction,
            "samples": list(self.samples),
            "median": self.median,
            "min": low,
            "max": high,
            "baseline": baseline,
            "paired": self.paired,
            "ratio": self.ratio,
            "ratio_min": ratio_spread[0] if ratio_spread else None,
            "ratio_max": ratio_spread[1] if ratio_spread else None,
            "target": self.target,
            "met": self.met,
            "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Figure:
        """A figure read back from :meth:`to_dict` output (the computed keys are recomputed, not trusted)."""
        baseline = data.get("baseline") or {}
        return cls(
            name=data["name"],
            unit=data["unit"],
            samples=data["samples"],
            baseline=baseline.get("name"),
            baseline_samples=baseline.get("samples", ()),
            paired=bool(data.get("paired", False)),
            direction=data.get("direction", "lower"),
            target=data.get("target"),
            notes=data.get("notes", ""),
        )


def figures_from_dict(data: Mapping[str, Any]) -> list[Figure]:
    """The figures of one script's JSON report."""
    return [Figure.from_dict(item) for item in data["figures"]]


def time_calls(func: Callable[[], object], runs: int, *, number: int = 1, warmup: int = 0) -> list[float]:
    """Seconds per call in each of ``runs`` runs of ``number`` calls, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        func()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(number):
            func()
        samples.append((time.perf_counter() - start) / number)
    return samples


async def time_calls_async(
    func: Callable[[], Awaitable[object]], runs: int, *, number: int = 1, warmup: int = 0
) -> list[float]:
    """Like :func:`time_calls`, awaiting each call."""
    for _ in range(warmup):
        await func()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(number):
            await func()
        samples.append((time.perf_counter() - start) / number)
    return samples


@dataclass
class Bench:
    """One script's run: its command-line options, and the figures and notes it reports."""

    name: str
    args: argparse.Namespace
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def quick(self) -> bool:
        """``--quick``: fewer runs and smaller inputs, for a smoke run."""
        return bool(self.args.quick)

    def runs(self, quick: int, full: int) -> int:
        """The number of runs: ``--runs N`` when given, else the script's default for the mode."""
        return int(self.args.runs) if self.args.runs else (quick if self.quick else full)

    def add(self, name: str, unit: str, samples: Iterable[float], **options: Any) -> Figure:
        """Report a figure (keyword options as :class:`Figure`); a figure is named once per baseline."""
        figure = Figure(name, unit, tuple(samples), **options)
        if any((f.name, f.baseline) == (figure.name, figure.baseline) for f in self.figures):
            raise ValueError(f"{self.name}: figure {name!r} against {figure.baseline!r} reported twice")
        self.figures.append(figure)
        return figure

    def note(self, text: str) -> None:
        """Record a line of context (sizes, counts, what was skipped), printed above the table."""
        self.notes.append(text)

    def to_dict(self, seconds: float) -> dict[str, Any]:
        """The JSON report ``--json`` writes."""
        return {
            "version": FORMAT_VERSION,
            "script": self.name,
            "quick": self.quick,
            "runs": self.args.runs,
            "seconds": seconds,
            "python": platform.python_version(),
            "notes": self.notes,
            "figures": [f.to_dict() for f in self.figures],
        }


def _parser(doc: str | None, arguments: Callable[[argparse.ArgumentParser], None] | None) -> argparse.ArgumentParser:
    summary = (doc or "").strip().splitlines()[0] if doc and doc.strip() else None
    parser = argparse.ArgumentParser(description=summary)
    parser.add_argument("--quick", action="store_true", help="fewer runs and smaller inputs (a smoke run)")
    parser.add_argument("--runs", type=_positive, metavar="N", help="runs per figure (default: the script's own)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON to PATH")
    if arguments is not None:
        arguments(parser)
    return parser


def add_memory_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--dir``: where a host benchmark puts its config dirs and fact logs; /dev/shm when it exists, because the
    disk's fsync is not the host's overhead (a disk shows it: ``--dir`` on one)."""
    default = "/dev/shm" if Path("/dev/shm").is_dir() else None
    parser.add_argument("--dir", default=default, help="where the config dirs and fact logs go (default: /dev/shm)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _script_name(measure: Callable[..., object]) -> str:
    module = sys.modules.get(measure.__module__)
    file = getattr(module, "__file__", None)
    return Path(file).stem if file else measure.__module__


def run(
    measure: Callable[[Bench], object],
    doc: str | None,
    argv: Sequence[str] | None = None,
    *,
    arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    name: str | None = None,
) -> int:
    """Parse the common options (plus ``arguments``), run ``measure``, print the table, write ``--json``.

    ``measure`` may be a coroutine function (it then runs on the event loop ``ishiki run`` takes by default).
    The exit status is 0 even when a target is missed (benchmarks inform); a measure that fails raises, and the
    script exits non-zero.
    """
    args = _parser(doc, arguments).parse_args(argv)
    bench = Bench(name or _script_name(measure), args)
    start = time.perf_counter()
    if inspect.iscoroutinefunction(measure):
        from ishiki_host import eventloop  # only async scripts pay for the import

        eventloop.run(measure, bench)  # the loop `ishiki run` takes
    else:
        measure(bench)
    seconds = time.perf_counter() - start
    if not bench.figures:
        print(f"{bench.name}: reported no figures", file=sys.stderr)
        return 2
    print(f"{bench.name} ({'quick' if bench.quick else 'full'} run, {seconds:.1f} s)")
    for line in bench.notes:
        print(f"  {line}")
    print(render_table([(bench.name, f) for f in bench.figures], with_script=False))
    for figure in bench.figures:
        if figure.notes:
            print(f"  {figure.name}: {figure.notes}")
    for figure in bench.figures:
        if figure.met is False:
            print(missed_line(bench.name, figure))
    if args.json is not None:
        _write_json(args.json, bench.to_dict(seconds))
    return 0


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write atomically, so a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    temporary.replace(path)
