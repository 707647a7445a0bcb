"""End-to-end cost of the variant engines, each against the same work without the engine.

- ``json`` / ``xml`` wrappers: one model call through ``TextProtocolModel`` (render the request with 10 tools
  and 20 history messages, call an in-process model, parse a 2 KB answer with two calls) against calling that
  model directly with the request as it is.
- ``willingness``: inbound messages through a real runtime (``RuntimeHarness``: fact log, bus, agent) with the
  engine attached, scoring every message and saving its state file, against the same runtime without it.
  Every message stays below the threshold, so no turn runs and only ingestion is measured.

Run: ``.venv/bin/python bench/engine_variants.py [--quick] [--runs N] [--json PATH]``. Runs alternate engine and
baseline (paired); the ratios are what to compare across machines.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import Bench, run, time_calls_async

from ishiki_host.channels.events import IshikiEvent, User
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.model import ModelRequest, ToolSpec
from ishiki_host.engines.toolcall.text import JsonToolcallEngine, XmlToolcallEngine
from ishiki_host.engines.wakeup.willingness import WillingnessWakeupEngine
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer"}}, "required": ["text"]}
TOOLS = tuple(ToolSpec(f"tool_{n}", f"Tool number {n}: does one thing well.", SCHEMA) for n in range(10))
PROSE = "Let me do both of these now, carefully. " * 40


def history() -> tuple[Message, ...]:
    """A system prompt, then ten exchanges of a question, a call and its result."""
    messages = [Message.system("You are a helpful persona. " * 20)]
    for n in range(10):
        call = ToolCall(f"c{n}", "tool_1", {"text": f"look up {n}"})
        messages += [Message.user(f"question {n}"), Message.assistant("", [call]), Message.tool(call, "result " * 20)]
    return tuple(messages)


def answers() -> dict[str, str]:
    """A 2 KB answer with two calls in each protocol."""
    calls = [{"name": "tool_1", "arguments": {"text": "a"}}, {"name": "tool_2", "arguments": {"text": "b"}}]
    actions = [{"function": c["name"], "params": c["arguments"]} for c in calls]
    xml = "".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>\n" for c in calls)
    return {"json": f"{PROSE}\n```json\n{json.dumps({'actions': actions})}\n```", "xml": f"{PROSE}\n{xml}"}


async def wrapper_samples(engine: Any, answer: str, count: int, runs: int) -> tuple[list[float], list[float]]:
    """Seconds per call in each run, (wrapped, bare), of one protocol's wrapper; runs alternate."""
    request = ModelRequest(history(), tools=TOOLS)
    model = FunctionModel(lambda request: reply(answer))
    wrapped_samples: list[float] = []
    bare_samples: list[float] = []
    with tempfile.TemporaryDirectory() as home:
        async with RuntimeHarness(Path(home), model=model) as rt:
            wrapped = engine.create(rt, {}).wrap(model)
            for _ in range(runs):
                bare_samples += await time_calls_async(lambda: model.generate(request), 1, number=count)
                wrapped_samples += await time_calls_async(lambda: wrapped.generate(request), 1, number=count)
    return wrapped_samples, bare_samples


def inbound(n: int) -> dict[str, Any]:
    """The data of an inbound group message in one of 50 channels."""
    event = IshikiEvent(
        kind="message.created",
        platform="telegram",
        self_id="bot1",
        channel_id=f"group:{n % 50}",
        message_id=str(n),
        timestamp=1_700_000_000.0,
        user=User("7", "Bob"),
        content="just chatting",
    )
    return {**Message.user("just chatting").to_dict(), "source": event.to_dict()}


async def ingest(count: int, *, engine: bool) -> float:
    """Seconds to ingest ``count`` messages, an hour apart (so no score ever reaches the threshold)."""
    clock = FakeClock()
    with tempfile.TemporaryDirectory() as home:
        async with RuntimeHarness(Path(home), model=FunctionModel(lambda r: reply("ok")), clock=clock) as rt:
            dispose = WillingnessWakeupEngine().create(rt, {"seed": 1}).attach(rt) if engine else None
            start = time.perf_counter()
            for n in range(count):
                await rt.agent.send(inbound(n))
                await clock.advance(3600)
            elapsed = time.perf_counter() - start
            if dispose is not None:
                await dispose()  # type: ignore[misc]
            assert rt.agent.queued == 0, "a message reached the threshold: the figure would include a turn"
    return elapsed


async def measure(bench: Bench) -> None:
    """The wrapper cost per protocol and the willingness ingestion cost, each against the bare path."""
    runs = bench.runs(quick=3, full=7)
    count = 200 if bench.quick else 2000
    for name, engine in (("json", JsonToolcallEngine()), ("xml", XmlToolcallEngine())):
        wrapped, bare = await wrapper_samples(engine, answers()[name], count, runs)
        bench.add(f"toolcall {name}: one call through the wrapper", "s", wrapped,
                  baseline="the bare in-process model", baseline_samples=bare, paired=True)  # fmt: skip
    messages = count // 4
    with_engine: list[float] = []
    without: list[float] = []
    for _ in range(runs):
        with_engine.append(messages / await ingest(messages, engine=True))
        without.append(messages / await ingest(messages, engine=False))
    bench.add("willingness: messages ingested", "messages/s", with_engine, direction="higher",
              baseline="the same runtime without the engine", baseline_samples=without, paired=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
