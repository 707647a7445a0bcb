"""Context-window benchmark: select + project a step's window from a small vs a huge fact log.

    .venv/bin/python bench/context_window.py [--quick] [--runs N] [--json PATH] [--dir DIR]

Both logs hold the same kind of conversation (group chatter, exchanges with a send_message call and its
result) and end the same way: an inbound message and the running turn's start. The standard context engine
selects the window (whole exchanges inside the budget of a 8,000-token context window, about 600 entries, far
more than the log's 256-entry read cache) and projects it into messages, as at every step of a turn. Two
cases: no compaction yet (reading stops once the budget is full, plus the engine's bounded look for a summary),
and after a compaction (reading stops at the compact entry's ``upto``); each for a new engine instance (every
entry rendered and counted) and at later steps (token counts cached per entry). Each is reported for the huge
log against the 1,000-entry one; the ratio should stay near 1: the cost follows the window, not the log.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from _report import Bench, run

from ishiki_host import HostServices
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.turns import Step, Turn, TurnSetup
from ishiki_host.engines.context.standard import StandardContext, StandardContextEngine

PERSONA = "You are Kai, a friendly regular of this group chat. " * 4
CONTEXT_WINDOW = 8_000


def inbound(number: int, text: str) -> dict[str, Any]:
    source = {
        "kind": "message.created",
        "platform": "telegram",
        "selfId": "bot1",
        "channelId": "group:-100",
        "isDirect": False,
        "messageId": str(number),
        "timestamp": 1_700_000_000.0 + number,
        "content": text,
        "mentionsSelf": "@kai" in text,
        "user": {"id": str(number % 7), "name": f"member {number % 7}"},
    }
    return {"role": "user", "parts": [{"type": "text", "text": text}], "source": source}


def exchange(first_id: int, turn: int) -> list[tuple[str, dict[str, Any], int | None]]:
    """Chatter, a mention, and the turn that answers it with one send_message call: 7 entries."""
    asked = first_id + 1
    call = {"id": f"call_{turn}", "name": "send_message", "arguments": {"messages": [f"answer {turn} " * 8]}}
    start = {"name": "turn.start", "priority": "interactive", "triggers": [{"by": "continue", "entry": asked}]}
    result = {"role": "tool", "parts": [{"type": "text", "text": '{"ok": true, "ids": ["5"]}'}]}
    return [
        ("message", inbound(first_id, f"chatter {first_id}: did anyone see the match last night? " * 2), None),
        ("message", inbound(asked, f"@kai what do you think about topic {turn}? " * 2), None),
        ("event", start, turn),
        ("message", {"role": "assistant", "parts": [], "tool_calls": [call], "finish_reason": "tool_calls"}, turn),
        ("message", {**result, "tool_call_id": call["id"], "tool_name": "send_message"}, turn),
        ("message", {"role": "assistant", "parts": [], "finish_reason": "stop"}, turn),
        ("event", {"name": "turn.done", "reason": "sent", "steps": 1}, turn),
    ]


def write_log(path: Path, entries: int, *, compact_at: int | None) -> int:
    """Write ``entries`` entries (plus a running turn) directly; returns the running turn's number."""
    with path.open("w", encoding="utf-8") as out:
        next_id, turn, batch = 1, 0, []
        while next_id <= entries:
            turn += 1
            for kind, data, number in exchange(next_id, turn):
                batch.append(line(next_id, kind, data, number))
                next_id += 1
            if compact_at is not None and entries - compact_at <= next_id <= entries - compact_at + 6:
                summary = {"upto": next_id - 100, "summary": "Earlier the group talked about many topics. " * 20}
                batch.append(line(next_id, "compact", summary, None))
                next_id += 1
            if len(batch) >= 10_000:
                out.write("".join(batch))
                batch.clear()
        asked = next_id
        batch.append(line(asked, "message", inbound(asked, "@kai and now?"), None))
        start = {"name": "turn.start", "priority": "interactive", "triggers": [{"by": "continue", "entry": asked}]}
        batch.append(line(asked + 1, "event", start, turn + 1))
        out.write("".join(batch))
        out.flush()
        os.fsync(out.fileno())
    return turn + 1


def line(entry_id: int, kind: str, data: dict[str, Any], turn: int | None) -> str:
    turn_part = f',"turn":{turn}' if turn is not None else ""
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f'{{"id":{entry_id},"type":"{kind}","ts":1700000000.0{turn_part},"data":{body}}}\n'


def engine() -> StandardContext:
    ctx = SimpleNamespace(
        sid="telegram:bot1",
        profile=SimpleNamespace(mode="channel", file=Path("profile.yml")),
        services=HostServices(timezone="UTC"),
        context_window=CONTEXT_WINDOW,
        key="bench",
    )
    return StandardContextEngine().create(ctx, {})


async def window_seconds(path: Path, turn: int, runs: int) -> tuple[list[float], list[float], int, int]:
    """Seconds of select + project per run for a new engine (cold) and at later steps (warm); window; parsed."""
    step = Step(Turn(turn, "interactive", setup=TurnSetup(system=PERSONA)), 1, [])
    cold, warm = [], []
    async with await FactLog.open(path, fsync="never") as log:
        for _ in range(runs):
            instance = engine()
            for times in (cold, warm):
                start = time.perf_counter()
                entries = await instance.select_entries(log, step)
                messages = await instance.project(entries, step)
                times.append(time.perf_counter() - start)
        before = log.stats.lines_parsed
        await instance.select_entries(log, step)
        parsed = log.stats.lines_parsed - before
    assert messages, "the window is empty"
    return cold, warm, len(entries), parsed


async def measure(bench: Bench) -> None:
    """Write the logs in ``--dir`` (or a temporary directory) and report both cases."""
    if bench.args.dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            await measure_in(bench, Path(tmp))
    else:
        bench.args.dir.mkdir(parents=True, exist_ok=True)
        await measure_in(bench, bench.args.dir)


async def measure_in(bench: Bench, directory: Path) -> None:
    """Both cases, each for a new engine and at later steps, huge log against the 1,000-entry one."""
    runs = bench.runs(quick=7, full=21)
    big = 100_000 if bench.quick else 1_000_000
    for label, compact_at in (("no compaction yet", None), ("after a compaction", 100)):
        results = []
        for size in (1_000, big):
            path = directory / f"log-{size}-{compact_at}.jsonl"
            turn = write_log(path, size, compact_at=compact_at)
            results.append(await window_seconds(path, turn, runs))
        (small_cold, small_warm, small_n, small_read), (big_cold, big_warm, big_n, big_read) = results
        bench.note(f"{label}: window of {small_n} / {big_n} entries, {small_read} / {big_read} lines parsed per step")
        baseline = "1,000-entry log"
        bench.add(f"{label}, new engine, {big:,}-entry log", "s", big_cold, baseline=baseline,
                  baseline_samples=small_cold, target="~1")  # fmt: skip
        bench.add(f"{label}, next steps, {big:,}-entry log", "s", big_warm, baseline=baseline,
                  baseline_samples=small_warm, target="~1")  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own option."""
    parser.add_argument("--dir", type=Path, help="where to write the logs (default: a temporary directory)")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring); ``--quick`` uses a 100,000-entry log, not 1,000,000."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
