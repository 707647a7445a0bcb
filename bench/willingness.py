"""Willingness decisions per second over 10,000 channels, against the bare loop (dict lookup + one draw).

Run: ``.venv/bin/python bench/willingness.py [--quick]``. Both loops see the same channels, features and
times; the figure to compare across machines is the ratio (model time / baseline time), median of several runs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

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


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer decisions and runs (noisier figures)")
    args = parser.parse_args()
    decisions, runs = (50_000, 3) if args.quick else (500_000, 7)
    work = workload(decisions)
    model = statistics.median(run_model(work) for _ in range(runs))
    base = statistics.median(run_baseline(work) for _ in range(runs))
    print(f"willingness: {decisions} decisions over {CHANNELS} channels, median of {runs} runs")
    print(f"  baseline (dict lookup + draw): {decisions / base:12,.0f} per second")
    print(f"  WillingnessModel.decide:       {decisions / model:12,.0f} per second   ratio {model / base:5.1f}x")


if __name__ == "__main__":
    main()
