"""Run every benchmark under bench/ and print one table: ``make bench [QUICK=1]`` or ``python -m bench``.

Each ``bench/<name>.py`` (not ``_*.py``) runs in its own process, one after the other so they do not disturb
each other's timings, with ``--json`` pointing into a temporary directory. The runner gathers those reports into
one table and one results file, ``bench/results/<UTC time>.json`` (and ``latest.json``). A missed target is
marked but does not fail the run (benchmarks inform); a script that crashes, times out or writes no report
does (exit status 1).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _report import Figure, figures_from_dict
from _table import aligned, missed_line, number, quantity, render_table

HERE = Path(__file__).resolve().parent
RESULTS_VERSION = 1


@dataclass
class Outcome:
    """How one script's run went, and what it reported."""

    name: str
    status: str  # "ok", "failed" or "timeout"
    seconds: float
    returncode: int | None = None
    report: dict[str, Any] = field(default_factory=dict)
    error: str = ""

    @property
    def figures(self) -> list[Figure]:
        """The figures the script reported (none unless it succeeded)."""
        return figures_from_dict(self.report) if self.report else []

    def to_dict(self) -> dict[str, Any]:
        """This script's part of the results file."""
        return {"status": self.status, "seconds": self.seconds, "returncode": self.returncode,
                "error": self.error, "report": self.report or None}  # fmt: skip


def discover(directory: Path, only: Sequence[str] = ()) -> list[Path]:
    """The bench scripts in ``directory``, or just those named in ``only`` (a ValueError names unknown ones)."""
    scripts = {p.stem: p for p in sorted(directory.glob("*.py")) if not p.name.startswith("_")}
    unknown = [name for name in only if name.removesuffix(".py") not in scripts]
    if unknown:
        raise ValueError(f"no bench script named {', '.join(unknown)} in {directory} (have: {', '.join(scripts)})")
    wanted = {name.removesuffix(".py") for name in only}
    return [path for name, path in scripts.items() if not wanted or name in wanted]


def _tail(path: Path, lines: int = 15) -> str:
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return "\n".join(text.strip().splitlines()[-lines:])


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the script and everything it started (its own process group), and reap it."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_script(script: Path, workdir: Path, *, quick: bool, runs: int | None, timeout: float) -> Outcome:
    """Run one script in its own process group (so a timeout also ends what it started) and read its report."""
    report, out, err = (workdir / f"{script.stem}.{suffix}" for suffix in ("json", "out", "err"))
    command = [sys.executable, str(script), "--json", str(report)]
    command += ["--quick"] if quick else []
    command += ["--runs", str(runs)] if runs else []
    start = time.perf_counter()
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, start_new_session=True)
        try:
            returncode = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end_group(process)
            return Outcome(script.stem, "timeout", time.perf_counter() - start, None, error=_tail(err))
        except BaseException:  # Ctrl-C: leave nothing running behind
            _end_group(process)
            raise
    seconds = time.perf_counter() - start
    if returncode != 0:
        return Outcome(script.stem, "failed", seconds, returncode, error=_tail(err) or _tail(out))
    if not report.exists():
        hint = "it exited 0 without writing its --json report (does it report through bench/_report.py?)"
        return Outcome(script.stem, "failed", seconds, returncode, error=hint)
    return Outcome(script.stem, "ok", seconds, returncode, json.loads(report.read_text(encoding="utf-8")))


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def machine() -> dict[str, Any]:
    """Where the run happened: Python, platform, CPUs, load average, and the commit measured."""
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    commit = _git("rev-parse", "HEAD")
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "load": load, "commit": commit or None, "dirty": bool(_git("status", "--porcelain"))}  # fmt: skip


def _results_path(directory: Path, started: datetime) -> Path:
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    path, n = directory / f"{stamp}.json", 1
    while path.exists():
        n += 1
        path = directory / f"{stamp}-{n}.json"
    return path


def save(directory: Path, results: Mapping[str, Any], started: datetime) -> Path:
    """Write the results under their UTC time and as ``latest.json``; the timestamped path."""
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results, indent=1, ensure_ascii=False) + "\n"
    path = _results_path(directory, started)
    path.write_text(text, encoding="utf-8")
    (directory / "latest.json").write_text(text, encoding="utf-8")
    return path


def _index(results: Mapping[str, Any]) -> dict[tuple[str, str, str | None], Figure]:
    """The figures of a results file by (script, figure, baseline)."""
    found = {}
    for script, part in results.get("scripts", {}).items():
        if part.get("status") == "ok" and part.get("report"):
            found.update({(script, f.name, f.baseline): f for f in figures_from_dict(part["report"])})
    return found


def _value_and_band(figure: Figure) -> tuple[float, tuple[float, float]]:
    """The ratio (or the median, without a baseline) and the range its runs make plausible."""
    if figure.ratio is None:
        return figure.median, figure.spread
    if figure.ratio_spread is not None:
        return figure.ratio, figure.ratio_spread
    low, high = figure.spread
    return figure.ratio, (low / max(figure.baseline_samples), high / min(figure.baseline_samples))


def _show(figure: Figure, value: float) -> str:
    return f"{number(value)}x" if figure.ratio is not None else quantity(value, figure.unit)


def compare(previous: Mapping[str, Any], current: Mapping[str, Any]) -> str:
    """Per figure in both runs: the ratio (or median) before and now, the change, and how to read it.

    A change inside the previous run's spread (of per-run ratios when paired; else the widest ratio its runs
    allow) reads as noise; outside it, as better or worse by the figure's direction.
    """
    before, now = _index(previous), _index(current)
    rows = []
    for key, figure in now.items():
        if key not in before:
            continue
        old, (low, high) = _value_and_band(before[key])
        value, _ = _value_and_band(figure)
        if low <= value <= high:
            reading = "within previous spread"
        else:
            reading = "better" if (value < old) == (figure.direction == "lower") else "worse"
        change = f"{(value / old - 1) * 100:+.1f}%" if old else ""
        rows.append([key[0], key[1], key[2] or "", _show(figure, old), _show(figure, value), change, reading])
    lines = [aligned(("script", "figure", "baseline", "before", "now", "change", "reading"), rows, {3, 4, 5})]
    scripts = {script for script, _, _ in now}  # with --only, the scripts not run are not "gone"
    new = len(now.keys() - before.keys())
    gone = len([key for key in before.keys() - now.keys() if key[0] in scripts])
    if new or gone:
        lines.append(f"{new} figure(s) only in this run, {gone} only in the previous one")
    return "\n".join(lines)


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every script (a smoke run)")
    parser.add_argument("--only", nargs="+", default=[], metavar="NAME", help="run only these scripts")
    parser.add_argument("--runs", type=int, metavar="N", help="pass --runs N to every script")
    parser.add_argument("--compare", type=Path, metavar="PREVIOUS", help="print the change against a results file")
    parser.add_argument("--timeout", type=float, default=1800.0, metavar="S", help="per script (default 1800)")
    parser.add_argument("--dir", type=Path, default=HERE, help=argparse.SUPPRESS)  # other script folders, for tests
    parser.add_argument("--results", type=Path, default=HERE / "results", metavar="DIR", help="where to save")
    return parser.parse_args(argv)


def _load_previous(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--compare {path}: cannot read a results file ({exc})") from exc
    if not isinstance(data, dict) or "scripts" not in data:
        raise ValueError(f"--compare {path}: not a bench results file (no 'scripts' key)")
    return data


def _rows(outcomes: Sequence[Outcome]) -> list[tuple[str, Figure]]:
    return [(o.name, figure) for o in outcomes for figure in o.figures]


def _summary(outcomes: Sequence[Outcome], rows: Sequence[tuple[str, Figure]]) -> list[str]:
    lines = [missed_line(script, f) for script, f in rows if f.met is False]
    if lines:
        lines.append(f"{len(lines)} target(s) missed: informative, the exit status stays 0")
    for outcome in outcomes:
        if outcome.status != "ok":
            what = "timed out" if outcome.status == "timeout" else f"exited {outcome.returncode}"
            lines.append(f"CRASHED {outcome.name}: {what} after {outcome.seconds:.1f} s")
            lines.extend(f"    {line}" for line in outcome.error.splitlines())
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scripts, print the table, save the results; 1 if a script failed, 2 on bad options."""
    args = _arguments(argv)
    try:
        scripts = discover(args.dir, args.only)
        previous = _load_previous(args.compare) if args.compare else None
    except ValueError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    started, info = datetime.now(UTC), machine()
    load = " ".join(f"{v:.2f}" for v in info["load"] or ())
    print(f"bench: {len(scripts)} scripts, {'quick' if args.quick else 'full'} runs, {info['cpus']} CPUs, "
          f"load average {load or 'unknown'}", file=sys.stderr)  # fmt: skip
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="ishiki-bench-") as temp:
        for index, script in enumerate(scripts, 1):
            print(f"[{index:2d}/{len(scripts)}] {script.stem} ...", end=" ", file=sys.stderr, flush=True)
            outcome = run_script(script, Path(temp), quick=args.quick, runs=args.runs, timeout=args.timeout)
            print(f"{outcome.status} ({outcome.seconds:.1f} s)", file=sys.stderr)
            outcomes.append(outcome)
    rows = _rows(outcomes)
    results = {"version": RESULTS_VERSION, "started": started.isoformat(), "quick": args.quick, "runs": args.runs,
               "seconds": (datetime.now(UTC) - started).total_seconds(), "machine": info,
               "scripts": {o.name: o.to_dict() for o in outcomes}}  # fmt: skip
    print(render_table(rows) if rows else "no figures")
    for line in _summary(outcomes, rows):
        print(line)
    if previous is not None:
        print(f"\nchange against {args.compare} (started {previous.get('started', '?')})")
        print(compare(previous, results))
    print(f"\nresults: {save(args.results, results, started)}")
    return 0 if all(o.status == "ok" for o in outcomes) else 1
