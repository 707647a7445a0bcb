"""Session token estimation for a 10,000-message session, against ``sum(len(text))`` over the same messages.

Run: ``.venv/bin/python bench/session_tokens.py [--quick]``. The session is seeded chat: short and long lines,
a quarter Japanese, assistant turns with tool calls and results. Measured, as medians of several rounds:

- baseline: ``sum(len(m.text) for m in messages)``, the cheapest thing that looks at every message;
- estimate: ``estimate_messages_tokens(messages)`` (the default counter, what ``/status`` and the safety valve
  use);
- projection + estimate: ``project_entries`` over the fact-log entries, then the estimate (the in-memory part
  of ``SessionManager.size()``);
- ``SessionManager.size()``: the same, reading the session back from a real fact log on disk;
- tiktoken (``o200k_base``), only when installed with that encoding already on disk.

The ratios (time / baseline) are what to compare between machines.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.tokens import estimate_messages_tokens, tiktoken_estimator
from ishiki_host.core.window import project_entries
from ishiki_host.memory.sessions import SessionManager

MESSAGES = 10_000
WORDS = [
    "the",
    "trail",
    "climbs",
    "through",
    "pine",
    "forest",
    "over",
    "a",
    "ridge",
    "to",
    "the",
    "lake",
    "where",
    "we",
    "camp",
    "tonight",
]
JAPANESE = "今日は山の上で星を見ながらお茶を飲みました"


def _text(rng: random.Random) -> str:
    if rng.random() < 0.25:
        return JAPANESE[: rng.randint(5, len(JAPANESE))] * rng.randint(1, 4)
    return " ".join(rng.choices(WORDS, k=rng.choice([4, 12, 40, 120])))


def session(rng: random.Random, count: int) -> list[Message]:
    """``count`` messages: user, then assistant (a third with a tool call and its result)."""
    messages: list[Message] = []
    while len(messages) < count:
        messages.append(Message.user(_text(rng)))
        if rng.random() < 0.33:
            call = ToolCall(f"c{len(messages)}", "read", {"url": "local://notes.md", "lines": "1-40"})
            messages.append(Message.assistant("", [call]))
            messages.append(Message.tool(call, _text(rng)))
        messages.append(Message.assistant(_text(rng)))
    return messages[:count]


def _median(fn: Callable[[], Any], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        began = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


class _Idle:
    busy = False

    async def wait_idle(self) -> None:
        return None


async def _size_from_disk(messages: list[Message], rounds: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        log = await FactLog.open(Path(tmp) / "facts.jsonl", fsync="never", clock=FakeClock())
        try:
            await log.append_many([("message", m.to_dict()) for m in messages])
            manager = SessionManager(runtime_key="bench/main", profile="bench", log=log, agent=_Idle())
            samples = []
            for _ in range(rounds):
                began = time.perf_counter()
                size = await manager.size()
                samples.append(time.perf_counter() - began)
            assert size.messages == len(messages)
            return statistics.median(samples)
        finally:
            await log.close()


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    rounds = 3 if parser.parse_args().quick else 9
    messages = session(random.Random(7), MESSAGES)
    entries = [Entry(i + 1, "message", 0.0, m.to_dict()) for i, m in enumerate(messages)]

    baseline = _median(lambda: sum(len(m.text) for m in messages), rounds)
    estimate = _median(lambda: estimate_messages_tokens(messages), rounds)
    projected = _median(lambda: estimate_messages_tokens(project_entries(entries)), rounds)
    from_disk = anyio.run(_size_from_disk, messages, rounds)
    rows = [
        ("estimate", estimate),
        ("projection + estimate", projected),
        ("SessionManager.size() from disk", from_disk),
    ]
    counter = tiktoken_estimator("o200k_base")
    if counter is not None:
        rows.append(
            ("tiktoken o200k_base", _median(lambda: estimate_messages_tokens(messages, estimator=counter), rounds))
        )

    print(f"{MESSAGES:,}-message session, {estimate_messages_tokens(messages):,} estimated tokens, median of {rounds}")
    print(f"  baseline sum(len(text)): {baseline * 1000:8.2f} ms")
    for name, seconds in rows:
        print(f"  {name:<32} {seconds * 1000:8.2f} ms   {seconds / baseline:6.1f}x baseline")
    if counter is None:
        print("  tiktoken: not installed, or o200k_base not on disk (skipped)")


if __name__ == "__main__":
    main()
