"""Benchmarks of the runtime parts, as ratios against baselines measured in the same run.

- split_message: splitting Markdown at Telegram's 4,096 UTF-16 limit, against one ``utf16_len`` pass over the
  same text. The ratio should stay flat as the text grows (the search per part is bounded, not quadratic).
- read: one page from the middle of a large ``local://`` file through the resource center, against reading and
  decoding the same file with ``Path.read_bytes().decode()``.
- extension hooks: what a new runtime spends on its extensions' hooks (mount three extension instances, then one
  turn's ``ishiki_tools``, ``ishiki_instructions`` and ``ishiki_status`` in order) through the host's
  ``HookCatalog``, against the same through a fresh pluggy manager per runtime (``register``, then
  ``call_in_order``): why the host calls hooks itself (``docs/plugins.md``).

Run: ``.venv/bin/python bench/runtime_parts.py [--quick] [--runs N] [--json PATH]``.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from _report import Bench, run, time_calls

from ishiki_host import hookimpl
from ishiki_host.channels import split_message, utf16_len
from ishiki_host.plugins.hooks import HookCatalog, call_in_order, make_plugin_manager
from ishiki_host.resources import create_runtime_resources

_PER_TURN = ("ishiki_tools", "ishiki_instructions", "ishiki_status")


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


class _Memory:
    """An extension shaped like the built-in ones: a few hooks, some state, a property."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0

    @property
    def label(self) -> str:
        return f"{self.name}: {self.calls}"

    @hookimpl
    def ishiki_attach(self, runtime: object) -> None:
        self.calls += 1

    @hookimpl
    def ishiki_tools(self, runtime: object) -> list[object]:
        return []

    @hookimpl
    async def ishiki_instructions(self, runtime: object) -> str:
        return self.name

    @hookimpl
    async def ishiki_status(self, runtime: object) -> list[str]:
        return [self.label]


class _Skills(_Memory):
    pass


class _Beats(_Memory):
    @hookimpl
    def ishiki_commands(self, runtime: object) -> list[object]:
        return []


_KINDS = (_Memory, _Skills, _Beats)


def bench_hooks(bench: Bench, runs: int, number: int) -> None:
    """A new runtime's extension hooks: the host's hook catalog against a pluggy manager per runtime."""
    catalog = HookCatalog()

    async def through_catalog() -> None:
        mounted = [catalog.hooks(kind(kind.__name__)) for kind in _KINDS]
        for hook in _PER_TURN:
            for hooks in mounted:
                await hooks.call(hook, runtime=None)

    async def through_manager() -> None:
        manager = make_plugin_manager()
        plugins = [kind(kind.__name__) for kind in _KINDS]
        for plugin in plugins:
            manager.register(plugin)
        for hook in _PER_TURN:
            await call_in_order(manager, hook, plugins, runtime=None)

    def batch(fn: Callable[[], Awaitable[None]]) -> float:
        """Seconds per runtime over ``number`` runtimes (one event loop for the batch)."""

        async def many() -> None:
            for _ in range(number):
                await fn()

        return time_calls(lambda: anyio.run(many), 1)[0] / number

    batch(through_catalog), batch(through_manager)  # warm-up: imports, the catalog's first read of each class
    catalog_samples, manager_samples = [], []
    for _ in range(runs):  # interleaved, so drift during the run cancels out
        catalog_samples.append(batch(through_catalog))
        manager_samples.append(batch(through_manager))
    bench.add("a new runtime's extension hooks, through the host's hook catalog", "s", catalog_samples,
              baseline="a pluggy manager per runtime", baseline_samples=manager_samples,
              notes="3 extensions mounted, then one turn's tools, instructions and status")  # fmt: skip


def measure(bench: Bench) -> None:
    """Both parts; ``--quick`` splits only 64 KiB and reads a 20,000-line file."""
    runs = bench.runs(quick=3, full=7)
    bench_split(bench, runs, [64 * 1024] if bench.quick else [64 * 1024, 1024 * 1024])
    bench_read(bench, runs, 20_000 if bench.quick else 400_000)
    bench_hooks(bench, runs, 200 if bench.quick else 2_000)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
