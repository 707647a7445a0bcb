"""End-to-end cost of the variant engines, each against the same work without the engine.

- ``json`` / ``xml`` wrappers: one model call through ``TextProtocolModel`` (render the request with 10 tools
  and 20 history messages, call an in-process model, parse a 2 KB answer with two calls) against calling that
  model directly with the request as it is.
- ``willingness``: inbound messages through a real runtime (``RuntimeHarness``: fact log, bus, agent) with the
  engine attached, scoring every message and saving its state file, against the same runtime without it.
  Every message stays below the threshold, so no turn runs and only ingestion is measured.

Run: ``.venv/bin/python bench/engine_variants.py [--quick]``. Figures are medians of several runs made in this
process; the ratios (engine / baseline) are what to compare across machines.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.model import ModelRequest, ToolSpec
from ishiki_host.engines.toolcall.text import JsonToolcallEngine, XmlToolcallEngine
from ishiki_host.engines.wakeup.willingness import WillingnessWakeupEngine
from ishiki_host.runtime.events import IshikiEvent, User
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


async def time_calls(call: Callable[[], Awaitable[Any]], count: int) -> float:
    """Seconds for ``count`` sequential calls."""
    start = time.perf_counter()
    for _ in range(count):
        await call()
    return time.perf_counter() - start


async def wrapper_figures(count: int, runs: int) -> dict[str, tuple[float, float]]:
    """Median seconds per call, (wrapped, bare), per protocol."""
    figures = {}
    for name, engine in (("json", JsonToolcallEngine()), ("xml", XmlToolcallEngine())):
        figures[name] = await wrapper_figure(engine, answers()[name], count, runs)
    return figures


async def wrapper_figure(engine: Any, answer: str, count: int, runs: int) -> tuple[float, float]:
    """Median seconds per call of one protocol's wrapper, and of the bare model."""
    request = ModelRequest(history(), tools=TOOLS)
    model = FunctionModel(lambda request: reply(answer))
    with tempfile.TemporaryDirectory() as home:
        async with RuntimeHarness(Path(home), model=model) as rt:
            wrapped = engine.create(rt, {}).wrap(model)
            bare = [await time_calls(lambda: model.generate(request), count) for _ in range(runs)]
            text = [await time_calls(lambda: wrapped.generate(request), count) for _ in range(runs)]
    return statistics.median(text) / count, statistics.median(bare) / count


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


async def main_async(quick: bool) -> None:
    """Measure and print."""
    count, runs = (200, 3) if quick else (2000, 7)
    for name, (wrapped, bare) in (await wrapper_figures(count, runs)).items():
        print(f"toolcall {name}: {wrapped * 1e6:8.1f} us per call wrapped, {bare * 1e6:8.1f} us bare", end="")
        print(f"   (+{(wrapped - bare) * 1e6:.1f} us, ratio {wrapped / bare:5.1f}x)")
    messages = count // 4
    with_engine = statistics.median([await ingest(messages, engine=True) for _ in range(runs)])
    without = statistics.median([await ingest(messages, engine=False) for _ in range(runs)])
    print(
        f"willingness: {messages / with_engine:8.0f} messages/s ingested with the engine, "
        f"{messages / without:8.0f} without   (ratio {with_engine / without:4.2f}x)"
    )


def main() -> None:
    """Parse arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer calls and runs (noisier figures)")
    anyio.run(main_async, parser.parse_args().quick)


if __name__ == "__main__":
    main()
