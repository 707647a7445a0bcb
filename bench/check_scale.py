"""How ``ishiki check`` scales with the number of profiles.

Times the real ``ishiki check DIR --json`` command on generated config dirs of 1, 50 and 500 profiles (each
claiming its own channel of one account, with engine options, trust and session settings), the sizes
interleaved in every run, and reports each size against one profile. Target: 500 profiles cost under 3x one
profile, i.e. start-up dominates and the per-profile cost is small.

    .venv/bin/python bench/check_scale.py [--quick] [--runs N] [--json PATH]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import Bench, run

SIZES = (1, 50, 500)
TARGET = 3.0

MODELS = """\
providers:
  local:
    api: openai-completions
    base_url: http://127.0.0.1:11434/v1
    models:
      - id: llama3.1:8b
        context_window: 32768
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
  standard: {{budget_ratio: 0.7, refill_ratio: 0.4}}
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


def measure(bench: Bench) -> None:
    """Time every size in each run, then report sizes against one profile (runs paired)."""
    runs = bench.runs(quick=3, full=7)
    ishiki = Path(sys.executable).parent / "ishiki"
    with tempfile.TemporaryDirectory() as tmp:
        roots = {size: make_config(Path(tmp) / f"c{size}", size) for size in SIZES}
        for root in roots.values():  # warm the OS caches and the byte-code once
            time_check(ishiki, root)
        samples: dict[int, list[float]] = {size: [] for size in SIZES}
        for _ in range(runs):
            for size, root in roots.items():  # interleaved, so drift hits every size alike
                samples[size].append(time_check(ishiki, root))
    one = samples[SIZES[0]]
    bench.add("ishiki check, 1 profile", "s", one)
    for size in SIZES[1:]:
        target = f"< {TARGET:g}" if size == SIZES[-1] else None
        bench.add(f"ishiki check, {size} profiles", "s", samples[size], baseline="1 profile", baseline_samples=one,
                  paired=True, target=target)  # fmt: skip
    per_profile = [(big - small) / (SIZES[-1] - SIZES[0]) for big, small in zip(samples[SIZES[-1]], one, strict=True)]
    bench.add("cost per extra profile", "s", per_profile, notes=f"({SIZES[-1]} profiles - 1 profile) / {SIZES[-1] - 1}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
