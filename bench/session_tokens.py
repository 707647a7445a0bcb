"""Session token estimation for a 10,000-message session, against ``sum(len(text))`` over the same messages.

Run: ``.venv/bin/python bench/session_tokens.py [--quick] [--runs N] [--json PATH]``. The session is seeded chat:
short and long lines, a quarter Japanese, assistant turns with tool calls and results. Measured, one pass over
the whole session a run:

- baseline: ``sum(len(m.text) for m in messages)``, the cheapest thing that looks at every message;
- estimate: ``estimate_messages_tokens(messages)`` (the default counter, what ``/status`` and the safety valve
  use);
- projection + estimate: ``project_entries`` over the fact-log entries, then the estimate (the in-memory part
  of ``SessionManager.size()``);
- ``SessionManager.size()``: the same, reading the session back from a real fact log on disk;
- tiktoken (``o200k_base``), only when installed with that encoding already on disk.

Each is reported against the baseline; the ratios are what to compare between machines.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _report import Bench, run, time_calls

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.tokens import estimate_messages_tokens, tiktoken_estimator
from ishiki_host.core.window import project_entries
from ishiki_host.sessions.manager import SessionManager

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


class _Idle:
    busy = False

    async def wait_idle(self) -> None:
        return None


async def _size_from_disk(messages: list[Message], rounds: int) -> list[float]:
    """Seconds of ``SessionManager.size()`` per round, over a real fact log holding ``messages``."""
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
            return samples
        finally:
            await log.close()


def measure(bench: Bench) -> None:
    """Every counter against ``sum(len(text))`` over the same messages."""
    rounds = bench.runs(quick=3, full=9)
    messages = session(random.Random(7), MESSAGES)
    entries = [Entry(i + 1, "message", 0.0, m.to_dict()) for i, m in enumerate(messages)]

    bench.note(f"{MESSAGES:,}-message session, {estimate_messages_tokens(messages):,} estimated tokens")
    baseline = time_calls(lambda: sum(len(m.text) for m in messages), rounds)
    rows = [
        ("estimate_messages_tokens", time_calls(lambda: estimate_messages_tokens(messages), rounds)),
        ("projection + estimate", time_calls(lambda: estimate_messages_tokens(project_entries(entries)), rounds)),
        ("SessionManager.size() from disk", anyio.run(_size_from_disk, messages, rounds)),
    ]
    counter = tiktoken_estimator("o200k_base")
    if counter is not None:
        tiktoken = time_calls(lambda: estimate_messages_tokens(messages, estimator=counter), rounds)
        rows.append(("tiktoken o200k_base", tiktoken))
    else:
        bench.note("tiktoken: not installed, or o200k_base not on disk (skipped)")
    for name, samples in rows:
        bench.add(name, "s", samples, baseline="sum(len(text))", baseline_samples=baseline)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
