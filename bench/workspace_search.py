"""Workspace search benchmark: search_files over a generated 10,000-file tree vs ``grep -r`` on the same tree.

    .venv/bin/python bench/workspace_search.py [--quick] [--runs N] [--json PATH] [--dir DIR]

The tree (seeded, so every run searches the same bytes) has 100 directories of 100 text files of 1-4 KB and
a few binary files. Each pattern is searched by the workspace's search_files tool (the real handler: the
descriptor walk, the binary and size checks, the ``regex`` engine, rendering) with a result cap high enough to
report every match, and by ``grep -rnIE`` (recursive, line numbers, binaries skipped) with the same pattern.
Both are warmed up once and must find the same lines; the ratio is search_files / grep.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
from _report import Bench, run, time_calls_async
from ishiki_ext_workspace import WorkspaceTools, settings_from_config

from ishiki_host.core.clock import SystemClock
from ishiki_host.resources import ResourceCenter

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


async def measure_in(bench: Bench, directory: Path) -> None:
    """Write the tree in ``directory``; each pattern, search_files against grep -r."""
    runs = bench.runs(quick=3, full=7)
    root = directory / "tree"
    files = make_tree(root)
    settings = settings_from_config(
        {"root": str(root), "max_results": 1_000_000, "max_output_bytes": 64 * 1024 * 1024, "timeout_ms": 600_000},
        home=directory / "home",
        config_dir=directory,
    )
    tools = WorkspaceTools(settings, ResourceCenter, SystemClock())
    grep = shutil.which("grep")
    if grep is None:
        raise SystemExit("workspace_search: grep is not installed (it is the baseline)")
    bench.note(f"{files:,} files under {root}")
    for label, pattern in PATTERNS.items():

        async def ours(pattern: str = pattern) -> int:
            result = await tools.search_files({"pattern": pattern})
            assert not result.is_error, result.content
            return len(result.data["matches"])

        async def theirs(pattern: str = pattern) -> int:
            done = await anyio.run_process([grep, "-rnIE", pattern, str(root)], check=False)
            return done.stdout.count(b"\n")

        ours_n, grep_n = await ours(), await theirs()  # the warm-up, and the check that both find the same lines
        if ours_n != grep_n:
            raise SystemExit(f"{label}: search_files found {ours_n} lines, grep {grep_n}")
        ours_s = await time_calls_async(ours, runs)
        grep_s = await time_calls_async(theirs, runs)
        bench.add(f"search_files, {label}", "s", ours_s, baseline="grep -rnIE", baseline_samples=grep_s,
                  notes=f"pattern {pattern!r}, {ours_n:,} matching lines")  # fmt: skip


async def measure(bench: Bench) -> None:
    """Run in ``--dir``, or in a temporary directory removed afterwards."""
    if bench.args.dir is not None:
        await measure_in(bench, bench.args.dir)
        return
    with tempfile.TemporaryDirectory(prefix="ishiki-bench-") as temp:
        await measure_in(bench, Path(temp))


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own option."""
    parser.add_argument("--dir", type=Path, help="an empty directory for the tree (default: a temporary one)")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
