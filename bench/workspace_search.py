"""Workspace search benchmark: search_files over a generated 10,000-file tree vs ``grep -r`` on the same tree.

    .venv/bin/python bench/workspace_search.py [--quick] [--dir DIR]

The tree (seeded, so every run searches the same bytes) has 100 directories of 100 text files of 1-4 KB and
a few binary files. Each pattern is searched by the workspace's search_files tool (the real handler: the
descriptor walk, the binary and size checks, the ``regex`` engine, rendering) with a result cap high enough to
report every match, and by ``grep -rnIE`` (recursive, line numbers, binaries skipped) with the same pattern.
Both are warmed up once; the figures are medians of several runs, and the ratio is search_files / grep.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from ishiki_ext_workspace import WorkspaceTools, settings_from_config

from ishiki_host.core.clock import SystemClock
from ishiki_host.runtime.resources import ResourceCenter

WORDS = ("alpha", "beta", "gamma", "delta", "import", "return", "value", "result", "token", "buffer", "parser")
PATTERNS = {
    "rare literal": "needle_[0-9]+",
    "common regex": r"def [a-z_0-9]+\(x\)",
}


def make_tree(root: Path, dirs: int = 100, files: int = 100, seed: int = 7) -> int:
    """Write the tree; returns the number of files."""
    rng = random.Random(seed)
    count = 0
    for d in range(dirs):
        directory = root / f"pkg{d:03d}" / "src"
        directory.mkdir(parents=True)
        for f in range(files):
            lines = []
            for n in range(rng.randint(20, 80)):
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
                lines.append(f"def fn_{n}(x):" if n % 10 == 0 else f"    {words}")
            if rng.random() < 0.01:
                lines.insert(rng.randrange(len(lines)), f"    needle_{count}")
            (directory / f"mod{f:03d}.py").write_text("\n".join(lines) + "\n")
            count += 1
        if d % 10 == 0:
            (directory / "blob.bin").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    return count


async def median_seconds(runs: int, once: Callable[[], Awaitable[int]]) -> tuple[float, int]:
    """Median wall time of ``runs`` calls after one warm-up, and the count the last call returned."""
    found = await once()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        found = await once()
        times.append(time.perf_counter() - start)
    return statistics.median(times), found


async def main(quick: bool, directory: Path) -> None:
    runs = 3 if quick else 7
    root = directory / "tree"
    files = make_tree(root)
    settings = settings_from_config(
        {"root": str(root), "maxResults": 1_000_000, "maxOutputBytes": 64 * 1024 * 1024, "timeoutMs": 600_000},
        home=directory / "home",
        config_dir=directory,
    )
    tools = WorkspaceTools(settings, ResourceCenter, SystemClock())
    grep = shutil.which("grep")
    assert grep is not None, "grep is not installed"
    mode = "quick" if quick else "full"
    print(f"workspace search benchmark: {files:,} files under {root} ({mode}; medians of {runs})")
    for label, pattern in PATTERNS.items():

        async def ours(pattern: str = pattern) -> int:
            result = await tools.search_files({"pattern": pattern})
            assert not result.is_error, result.content
            return len(result.data["matches"])

        async def theirs(pattern: str = pattern) -> int:
            done = await anyio.run_process([grep, "-rnIE", pattern, str(root)], check=False)
            return done.stdout.count(b"\n")

        ours_s, ours_n = await median_seconds(runs, ours)
        grep_s, grep_n = await median_seconds(runs, theirs)
        assert ours_n == grep_n, f"{label}: search_files found {ours_n} lines, grep {grep_n}"
        print(
            f"{label:13} {pattern!r:26} {ours_n:7,} lines  search_files {ours_s * 1000:7.1f} ms"
            f"  grep -r {grep_s * 1000:7.1f} ms  ratio {ours_s / grep_s:.2f}x"
        )


def run(quick: bool, directory: Path | None) -> None:
    """Run in ``directory``, or in a temporary directory removed afterwards."""
    if directory is not None:
        anyio.run(main, quick, directory)
        return
    with tempfile.TemporaryDirectory(prefix="ishiki-bench-") as temp:
        anyio.run(main, quick, Path(temp))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--dir", type=Path, help="an empty directory for the tree (default: a temporary one)")
    args = parser.parse_args()
    run(args.quick, args.dir)
