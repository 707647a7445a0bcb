"""codemode overhead: one trivial tool call through a program vs the same call made directly.

Reports, measured in the same run:
- ``run_program`` of a program that makes one ``await tools.echo(...)`` call, against the direct
  ``await tool(input)`` (the baseline);
- ``run_program`` of a program that calls nothing (the sandbox's fixed cost), against the direct call;
- the start-up of a fresh QuickJS context with the prelude loaded, on the current thread, against the one-call
  program (the share of a program's cost that is start-up).

Run: ``.venv/bin/python bench/codemode.py [--quick] [--runs N] [--json PATH]``.
"""

from __future__ import annotations

import sys
from typing import Any

import _quickjs
from _report import Bench, run, time_calls, time_calls_async

from ishiki_host.tools.codemode import Limits, run_program
from ishiki_host.tools.codemode._prelude import PRELUDE

ONE_CALL = "return await tools.echo({ x: 1 });"
NO_CALL = "return 1;"


async def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


def fresh_context() -> None:
    context = _quickjs.Context()
    context.set_memory_limit(Limits().memory_limit_bytes)
    context.eval(PRELUDE)


async def measure(bench: Bench) -> None:
    """Each figure is the time per call in each round (1,000 direct calls or 5 programs a round)."""
    rounds = bench.runs(quick=15, full=101)
    tools = {"echo": echo}
    check = await run_program(ONE_CALL, tools)
    if check.value != {"x": 1}:
        raise SystemExit(f"the benchmark program failed: {check}")

    async def program(code: str) -> None:
        await run_program(code, tools)

    direct = await time_calls_async(lambda: echo({"x": 1}), rounds, number=1_000)
    one_call = await time_calls_async(lambda: program(ONE_CALL), rounds, number=5)
    no_call = await time_calls_async(lambda: program(NO_CALL), rounds, number=5)
    startup = time_calls(fresh_context, rounds * 5)
    baseline = {"baseline": "direct tool call", "baseline_samples": direct}
    bench.add("program with one tool call", "s", one_call, **baseline)
    bench.add("program with no tool call", "s", no_call, **baseline)
    bench.add("fresh context + prelude", "s", startup, baseline="program with one tool call", baseline_samples=one_call)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
