"""Benchmarks of the runtime parts, as ratios against baselines measured in the same run (median of runs).

- split_message: splitting Markdown at Telegram's 4,096 UTF-16 limit, against one ``utf16_len`` pass over the
  same text. The ratio should stay flat as the text grows (the search per part is bounded, not quadratic).
- read: one page from the middle of a large ``local://`` file through the resource center, against reading and
  decoding the same file with ``Path.read_bytes().decode()``.

Run: ``.venv/bin/python bench/runtime_parts.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from ishiki_host.channels import split_message, utf16_len
from ishiki_host.runtime.resources import create_runtime_resources


def _median(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _markdown(size: int) -> str:
    block = (
        "A paragraph with some words, an emoji 😀 and more words to fill the line. " * 6
        + "\n\n```python\n"
        + "\n".join(f"value_{n} = compute({n})  # a line of code" for n in range(40))
        + "\n```\n\n"
    )
    return (block * (size // len(block) + 1))[:size]


def bench_split(runs: int, sizes: list[int]) -> None:
    for size in sizes:
        text = _markdown(size)
        split = _median(runs, lambda text=text: split_message(text, 4096, measure=utf16_len))
        baseline = _median(runs, lambda text=text: utf16_len(text))
        parts = len(split_message(text, 4096, measure=utf16_len))
        print(f"split_message {size // 1024:>5} KiB -> {parts:>4} parts: {split / baseline:8.1f}x one utf16_len pass")


def bench_read(runs: int, lines: int) -> None:
    with tempfile.TemporaryDirectory() as home:
        path = Path(home, "big.log")
        path.write_text("\n".join(f"{n:08d} a log line with a little text in it" for n in range(lines)))
        center = create_runtime_resources(Path(home)).center

        def page() -> None:
            anyio.run(lambda: center.read("local://big.log", offset=lines // 2))

        read = _median(runs, page)
        baseline = _median(runs, lambda: path.read_bytes().decode())
        size = path.stat().st_size // (1024 * 1024)
        print(f"read a middle page of {size} MiB ({lines:,} lines): {read / baseline:6.1f}x read_bytes().decode()")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small run of each")
    quick = parser.parse_args().quick
    runs = 1 if quick else 7
    bench_split(runs, [64 * 1024] if quick else [64 * 1024, 1024 * 1024])
    bench_read(runs, 20_000 if quick else 400_000)


if __name__ == "__main__":
    main()
