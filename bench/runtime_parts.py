"""Benchmarks of the runtime parts, as ratios against baselines measured in the same run.

- split_message: splitting Markdown at Telegram's 4,096 UTF-16 limit, against one ``utf16_len`` pass over the
  same text. The ratio should stay flat as the text grows (the search per part is bounded, not quadratic).
- read: one page from the middle of a large ``local://`` file through the resource center, against reading and
  decoding the same file with ``Path.read_bytes().decode()``.

Run: ``.venv/bin/python bench/runtime_parts.py [--quick] [--runs N] [--json PATH]``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio
from _report import Bench, run, time_calls

from ishiki_host.channels import split_message, utf16_len
from ishiki_host.resources import create_runtime_resources


def _markdown(size: int) -> str:
    block = (
        "A paragraph with some words, an emoji 😀 and more words to fill the line. " * 6
        + "\n\n```python\n"
        + "\n".join(f"value_{n} = compute({n})  # a line of code" for n in range(40))
        + "\n```\n\n"
    )
    return (block * (size // len(block) + 1))[:size]


def bench_split(bench: Bench, runs: int, sizes: list[int]) -> None:
    """split_message at 4,096 UTF-16 units against one utf16_len pass, per text size."""
    for size in sizes:
        text = _markdown(size)
        split = time_calls(lambda text=text: split_message(text, 4096, measure=utf16_len), runs)
        baseline = time_calls(lambda text=text: utf16_len(text), runs)
        parts = len(split_message(text, 4096, measure=utf16_len))
        bench.add(f"split_message, {size // 1024:,} KiB Markdown", "s", split, baseline="one utf16_len pass",
                  baseline_samples=baseline, notes=f"{parts} parts")  # fmt: skip


def bench_read(bench: Bench, runs: int, lines: int) -> None:
    """One page from the middle of a local:// file against reading and decoding the whole file."""
    with tempfile.TemporaryDirectory() as home:
        path = Path(home, "big.log")
        path.write_text("\n".join(f"{n:08d} a log line with a little text in it" for n in range(lines)))
        center = create_runtime_resources(Path(home)).center

        def page() -> None:
            anyio.run(lambda: center.read("local://big.log", offset=lines // 2))

        read = time_calls(page, runs)
        baseline = time_calls(lambda: path.read_bytes().decode(), runs)
        size = path.stat().st_size / (1024 * 1024)
        bench.add(f"read a middle page, {lines:,}-line file", "s", read, baseline="read_bytes().decode()",
                  baseline_samples=baseline, notes=f"{size:.1f} MiB; each read includes an anyio.run")  # fmt: skip


def measure(bench: Bench) -> None:
    """Both parts; ``--quick`` splits only 64 KiB and reads a 20,000-line file."""
    runs = bench.runs(quick=3, full=7)
    bench_split(bench, runs, [64 * 1024] if bench.quick else [64 * 1024, 1024 * 1024])
    bench_read(bench, runs, 20_000 if bench.quick else 400_000)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
