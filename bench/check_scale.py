"""How ``ishiki check`` scales with the number of profiles.

Times the real ``ishiki check DIR --json`` command on generated config dirs of 1, 50 and 500 profiles (each
claiming its own channel of one account, with engine options, trust and session settings) and prints the
median of several runs and the ratio to one profile. Target: 500 profiles cost under 3x one profile, i.e.
start-up dominates and the per-profile cost is small.

    .venv/bin/python bench/check_scale.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (1, 50, 500)
TARGET = 3.0

MODELS = """\
providers:
  local:
    api: openai-completions
    baseUrl: http://127.0.0.1:11434/v1
    models:
      - id: llama3.1:8b
        contextWindow: 32768
groups:
  default:
    models: [local:llama3.1:8b]
"""

PROFILE = """\
model: default
mode: channel
channels:
  console:local: ["group:{n}", "private:{n}*", "!private:{n}0"]
context:
  engine: standard
  standard: {{budgetRatio: 0.7, refillRatio: 0.4}}
wakeup:
  engine: standard
  standard: {{keywords: [persona{n}, hello]}}
trust:
  owners: ["console:local"]
session:
  summarizer: manual
  compact_threshold: 0.85
"""


def make_config(root: Path, profiles: int) -> Path:
    """A config dir with ``profiles`` profiles."""
    root.mkdir(parents=True)
    (root / "models.yaml").write_text(MODELS)
    (root / "ishiki.yaml").write_text("timezone: UTC\n")
    for n in range(profiles):
        directory = root / "profiles" / f"p{n:04d}"
        directory.mkdir(parents=True)
        (directory / "profile.yml").write_text(PROFILE.format(n=n))
        (directory / "persona.md").write_text(f"You are persona {n}.\n")
    return root


def time_check(ishiki: Path, root: Path) -> float:
    """Seconds one ``ishiki check --json`` takes."""
    start = time.perf_counter()
    done = subprocess.run([str(ishiki), "check", str(root), "--json"], capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1) or '"profiles"' not in done.stdout:
        raise SystemExit(f"ishiki check failed on {root}: {done.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    runs = 3 if args.quick else 7
    ishiki = Path(sys.executable).parent / "ishiki"
    with tempfile.TemporaryDirectory() as tmp:
        roots = {size: make_config(Path(tmp) / f"c{size}", size) for size in SIZES}
        for root in roots.values():  # warm the OS caches and the byte-code once
            time_check(ishiki, root)
        samples: dict[int, list[float]] = {size: [] for size in SIZES}
        for _ in range(runs):
            for size, root in roots.items():  # interleaved, so drift hits every size alike
                samples[size].append(time_check(ishiki, root))
    medians = {size: statistics.median(values) for size, values in samples.items()}
    base = medians[SIZES[0]]
    print(f"ishiki check, median of {runs} runs")
    for size in SIZES:
        spread = max(samples[size]) - min(samples[size])
        line = f"  {size:4d} profiles: {medians[size] * 1000:7.1f} ms (spread {spread * 1000:5.1f} ms)"
        print(f"{line}  ratio {medians[size] / base:.2f}")
    per_profile = (medians[SIZES[-1]] - base) / (SIZES[-1] - SIZES[0]) * 1000
    ratio = medians[SIZES[-1]] / base
    print(f"  per profile: {per_profile:.2f} ms; 500/1 ratio {ratio:.2f} (target < {TARGET})")
    return 0 if ratio < TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
