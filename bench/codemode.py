"""codemode overhead: one trivial tool call through a program vs the same call made directly.

Reports, measured in the same run:
- ``run_program`` of a program that makes one ``await tools.echo(...)`` call, against the direct
  ``await tool(input)`` (the baseline);
- ``run_program`` of a program that calls nothing (the sandbox's fixed cost), against the direct call;
- the start-up of a fresh QuickJS context with the prelude loaded, on the current thread, against the one-call
  program (the share of a program's cost that is start-up);
- end to end, a whole turn of a real runtime (``RuntimeHarness`` with the kernel tools, an instant in-process
  model, the fact log on disk without fsync) whose model calls the tool through a ``codemode`` program, then ``finish``,
  against the same turn calling the tool directly: what codemode adds to a turn.

Run: ``.venv/bin/python bench/codemode.py [--quick] [--runs N] [--json PATH]``.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import _quickjs
from _report import Bench, run, time_calls, time_calls_async

from ishiki_host.config.profile_types import CodemodeConfig, Profile
from ishiki_host.core.messages import ToolCall
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.testing import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply, tool_call
from ishiki_host.tools.codemode import Limits, run_program
from ishiki_host.tools.codemode._prelude import PRELUDE

ONE_CALL = "return await tools.echo({ x: 1 });"
NO_CALL = "return 1;"


async def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


async def echo_tool(args: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return dict(args)


def turn_model(call: ToolCall) -> FunctionModel:
    """Calls ``call`` at a turn's first step and ``finish`` once it has a tool result."""

    def answer(request: ModelRequest) -> ModelResult:
        done = request.messages[-1].role == "tool"
        return reply("", tool_call("finish") if done else call)

    return FunctionModel(answer)


async def turn_times(home: Path, call: ToolCall, codemode: bool, rounds: int, number: int) -> list[float]:
    """Seconds per turn of a real runtime whose model makes ``call`` (through codemode when ``codemode``)."""
    profile = Profile(id="bench", directory=home, file=home / "profile.yml", persona="Bench.", model="m")
    profile = replace(profile, codemode=CodemodeConfig() if codemode else None)
    tools = [Tool("echo", "Echo the input.", echo_tool, {"type": "object"})]
    # fsync never: the disk's sync latency would drown what codemode adds
    harness = RuntimeHarness(
        home, model=turn_model(call), profile=profile, extra_tools=tools, kernel_tools=True, fsync="never"
    )
    async with harness as rt:
        outcome = await rt.say("go")
        if (outcome.reason, outcome.steps) != ("finish", 2):
            raise SystemExit(f"the benchmark turn did not run as planned: {outcome}")
        return await time_calls_async(lambda: rt.say("go"), rounds, number=number)


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
    with tempfile.TemporaryDirectory() as tmp:
        turns = bench.runs(quick=7, full=21)
        direct_turn = await turn_times(Path(tmp, "direct"), tool_call("echo", {"x": 1}), False, turns, 20)
        program_call = tool_call("codemode", {"code": ONE_CALL})
        program_turn = await turn_times(Path(tmp, "codemode"), program_call, True, turns, 20)
    bench.add("turn with a codemode program", "s", program_turn, baseline="turn with a direct call",
              baseline_samples=direct_turn)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
