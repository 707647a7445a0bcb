"""Willingness decisions per second over 10,000 channels, against the bare loop (dict lookup + one draw).

Run: ``.venv/bin/python bench/willingness.py [--quick] [--runs N] [--json PATH]``. Both loops see the same
channels, features and times; the figure is decisions per second, and the one to compare across machines is
its ratio to the bare loop's rate.
"""

from __future__ import annotations

import random
import sys
import time

from _report import Bench, run

from ishiki_host.engines.wakeup import MessageFeatures
from ishiki_host.engines.wakeup.willingness_model import WillingnessModel, WillingnessOptions

CHANNELS = 10_000
FEATURES = [
    MessageFeatures(text="just chatting about the weather"),
    MessageFeatures(text="anyone here likes tea?"),
    MessageFeatures(quotes_self=True, text="replying to you"),
    MessageFeatures(mentions_self=True, text="@bot hello"),
    MessageFeatures(is_direct=True, text="hi in private"),
]


def workload(decisions: int) -> list[tuple[str, MessageFeatures, float]]:
    """A seeded stream of messages spread over ``CHANNELS`` channels, a few milliseconds apart."""
    rng = random.Random(2024)
    ids = [f"group:{n}" for n in range(CHANNELS)]
    now, out = 1_700_000_000.0, []
    for _ in range(decisions):
        now += rng.random() * 0.01
        out.append((rng.choice(ids), rng.choices(FEATURES, weights=[60, 20, 8, 8, 4])[0], now))
    return out


def run_model(work: list[tuple[str, MessageFeatures, float]]) -> float:
    """Seconds for the real model to decide every message."""
    model = WillingnessModel(WillingnessOptions.from_config({"keywords": ["tea"], "seed": 1}))
    rng = model.options.make_rng()
    decide = model.decide
    start = time.perf_counter()
    for channel, features, now in work:
        decide(channel, features, now, rng)
    return time.perf_counter() - start


def run_baseline(work: list[tuple[str, MessageFeatures, float]]) -> float:
    """Seconds for the same loop doing only the dict lookup and one random draw."""
    state: dict[str, list[float]] = {channel: [0.0, 0.0] for channel, _, _ in work}
    rng = random.Random(1)
    start = time.perf_counter()
    for channel, _features, _now in work:
        state.get(channel)
        rng.random()
    return time.perf_counter() - start


def measure(bench: Bench) -> None:
    """All model runs, then all baseline runs, over the same seeded stream."""
    runs = bench.runs(quick=3, full=7)
    decisions = 50_000 if bench.quick else 500_000
    work = workload(decisions)
    model = [decisions / run_model(work) for _ in range(runs)]
    base = [decisions / run_baseline(work) for _ in range(runs)]
    baseline = {"baseline": "dict lookup + one draw", "baseline_samples": base}
    bench.add(f"WillingnessModel.decide, {CHANNELS:,} channels", "decisions/s", model, direction="higher",
              notes=f"{decisions:,} decisions a run", **baseline)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
