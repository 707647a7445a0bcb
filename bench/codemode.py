"""codemode overhead: one trivial tool call through a program vs the same call made directly.

Prints medians and ratios measured in the same run:
- a direct ``await tool(input)`` (the baseline);
- ``run_program`` of a program that makes that one call (ratio to the direct call);
- ``run_program`` of a program that calls nothing (the sandbox's fixed cost);
- the start-up of a fresh QuickJS context with the prelude loaded, on the current thread (absolute, and as a
  share of the one-call program).

Run: ``.venv/bin/python bench/codemode.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import _quickjs
import anyio

from ishiki_host.tools.codemode import Limits, run_program
from ishiki_host.tools.codemode._prelude import PRELUDE

ONE_CALL = "return await tools.echo({ x: 1 });"
NO_CALL = "return 1;"


async def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


async def median_async(run: Callable[[], Awaitable[object]], rounds: int, per_round: int) -> float:
    """Median seconds per call over ``rounds`` rounds of ``per_round`` calls."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(per_round):
            await run()
        samples.append((time.perf_counter() - start) / per_round)
    return statistics.median(samples)


def median_sync(run: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def fresh_context() -> None:
    context = _quickjs.Context()
    context.set_memory_limit(Limits().memory_limit_bytes)
    context.eval(PRELUDE)


async def main(quick: bool) -> None:
    rounds = 15 if quick else 101
    tools = {"echo": echo}
    check = await run_program(ONE_CALL, tools)
    if check.value != {"x": 1}:
        raise SystemExit(f"the benchmark program failed: {check}")

    async def program(code: str) -> None:
        await run_program(code, tools)

    direct = await median_async(lambda: echo({"x": 1}), rounds, 1_000)
    one_call = await median_async(lambda: program(ONE_CALL), rounds, 5)
    no_call = await median_async(lambda: program(NO_CALL), rounds, 5)
    startup = median_sync(fresh_context, rounds * 5)

    print(f"direct tool call                 {direct * 1e6:10.2f} us   (baseline)")
    print(f"program with one tool call       {one_call * 1e3:10.3f} ms   {one_call / direct:8.0f}x direct")
    print(f"program with no tool call        {no_call * 1e3:10.3f} ms   {no_call / direct:8.0f}x direct")
    share = startup / one_call
    print(f"fresh context + prelude          {startup * 1e3:10.3f} ms   {share:8.2f}x the one-call program")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    anyio.run(main, parser.parse_args().quick)
