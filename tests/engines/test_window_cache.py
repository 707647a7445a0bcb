"""The standard engine's kept window (``_cache.WindowCache``) selects what ``select_window`` selects from the log.

Random logs (exchanges, group chatter, running turns, calls left without results, compactions, ``/clear``
boundaries, cooled logs) and random budgets: after every change, the window extended step by step equals the
one selected anew from the file, and its messages projected step by step (``Projection``) equal the ones
``project_entries`` makes of it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.window import Projection, project_entries
from ishiki_host.engines.context._cache import WindowCache
from ishiki_host.engines.context._window import Window, WindowParams, select_window

pytestmark = pytest.mark.anyio


def cost(entry: Entry) -> int:
    if entry.type in ("compact", "session"):
        return 5 if entry.data.get("summary") else 0
    return int(entry.data.get("tokens", 0)) if entry.type == "message" else 0


def user(tokens: int, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "text": "hi"}], "tokens": tokens, **extra}


class Writer:
    """Appends what the agent and the compactor write, as the operations of a hypothesis example say."""

    def __init__(self, log: FactLog):
        self.log = log
        self.turns = 0
        self.running: int | None = None

    async def apply(self, op: tuple[str, int, int]) -> None:
        kind, a, b = op
        log = self.log
        if kind == "user":
            await log.append("message", user(a))
        elif kind == "start" and self.running is None:
            self.turns += 1
            self.running = self.turns
            trigger = max(1, log.last_id - b) if log.last_id else 0
            start = {"name": "turn.start", "triggers": [{"by": "continue", "entry": trigger}] if trigger else []}
            await log.append("event", start, turn=self.running)
            if a % 3 == 0:
                await log.append("message", user(a, wake=True), turn=self.running)
        elif kind == "step" and self.running is not None:
            calls = [{"id": f"c{log.last_id}-{i}", "name": "t", "arguments": {}} for i in range(b % 3)]
            assistant = {"role": "assistant", "parts": [{"type": "text", "text": "x"}] if a % 2 else [],
                         "tool_calls": calls, "tokens": a}  # fmt: skip
            await log.append("message", assistant, turn=self.running)
            for call in calls[: len(calls) - (a % 4 == 3)]:  # now and then a call left without its result
                result = {"role": "tool", "tool_call_id": call["id"], "parts": [], "tokens": b}
                await log.append("message", result, turn=self.running)
        elif kind == "end" and self.running is not None:
            name = ("turn.done", "turn.failed", "turn.aborted")[a % 3]
            await log.append("event", {"name": name}, turn=self.running)
            self.running = None
        elif kind == "compact" and log.last_id:
            data: dict[str, Any] = {"upto": max(0, log.last_id - a)}
            if b % 2:
                data["summary"] = "so far"
            await log.append("compact", data)
        elif kind == "session":
            await log.append("session", {"summary": "seed"} if a % 2 else {})
        elif kind == "cool":
            log.shrink_cache(a % 4)
        elif kind == "custom":
            await log.append("custom", {"n": a})


def summary(window: Window) -> tuple[Any, ...]:
    head = window.head.id if window.head is not None else None
    return ([e.id for e in window.entries], head, window.upto, window.cut, window.tokens)


KINDS = ["user"] * 8 + ["start"] * 4 + ["step"] * 6 + ["end"] * 4 + ["custom", "cool", "compact", "session"]
OPS = st.tuples(st.sampled_from(KINDS), st.integers(0, 60), st.integers(0, 12))


async def run_example(ops: list[tuple[str, int, int]], budgets: list[int], refill: float) -> None:
    with tempfile.TemporaryDirectory() as directory:
        async with await FactLog.open(Path(directory) / "facts.jsonl", cache_size=8) as log:
            writer, cache, projection = Writer(log), WindowCache(), Projection()
            for index, op in enumerate(ops):
                await writer.apply(op)
                params = WindowParams(budgets[index % len(budgets)], refill, cost, writer.running)
                kept = await cache.select(log, params)
                fresh = await log.read_back(lambda entries, p=params: select_window(entries, p))  # type: ignore[misc]
                assert summary(kept) == summary(fresh), f"after op {index} {op}"
                assert projection(kept.entries) == project_entries(fresh.entries), f"after op {index} {op}"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(OPS, min_size=60, max_size=200),
    budgets=st.lists(st.integers(0, 200), min_size=1, max_size=3),
    refill=st.floats(0, 1),
)
def test_a_kept_window_equals_one_selected_anew(
    ops: list[tuple[str, int, int]], budgets: list[int], refill: float
) -> None:
    anyio.run(run_example, ops, budgets, refill)


async def test_a_step_reads_what_was_appended_not_the_window(tmp_path: Path) -> None:
    async with await FactLog.open(tmp_path / "facts.jsonl") as log:
        writer, cache = Writer(log), WindowCache()
        for _ in range(200):
            for op in (("user", 10, 0), ("start", 1, 0), ("step", 10, 1), ("end", 0, 0)):
                await writer.apply(op)
        await cache.select(log, WindowParams(100_000, 0.5, cost))
        parsed = log.stats.lines_parsed
        for _ in range(20):
            await writer.apply(("user", 10, 0))
            window = await cache.select(log, WindowParams(100_000, 0.5, cost))
            assert window.read == 1
        assert cache.rebuilds == 1
        assert log.stats.lines_parsed == parsed  # every step was served from what is kept and the log's cache


async def test_a_compaction_a_clear_and_a_cooled_log_rebuild_it(tmp_path: Path) -> None:
    async with await FactLog.open(tmp_path / "facts.jsonl") as log:
        writer, cache = Writer(log), WindowCache()
        params = WindowParams(1_000, 0.5, cost)
        await writer.apply(("user", 10, 0))
        await cache.select(log, params)
        for op, rebuilds in ((("user", 10, 0), 1), (("compact", 0, 1), 2), (("session", 1, 0), 3), (("cool", 0, 0), 4)):
            await writer.apply(op)
            await cache.select(log, params)
            assert cache.rebuilds == rebuilds, op


async def test_a_window_whose_compaction_never_lands_keeps_a_bounded_copy(tmp_path: Path) -> None:
    async with await FactLog.open(tmp_path / "facts.jsonl") as log:
        writer, cache = Writer(log), WindowCache()
        params = WindowParams(100, 0.5, cost)
        for _ in range(300):
            await writer.apply(("user", 10, 0))
            kept = await cache.select(log, params)
        fresh = await log.read_back(lambda entries: select_window(entries, params))
        assert summary(kept) == summary(fresh)
        live = cache._live
        assert live is not None
        assert len(live.flat) <= 2 * 3 * 100 // 10 + 1  # KEEP budgets, twice, not 300 entries
