"""Memory retrieval time with 100 vs 100,000 rows, against a raw SQLite SELECT by id in the same run.

Run: ``.venv/bin/python bench/memory_retrieval.py [--quick] [--runs N] [--json PATH]``. Memories and queries
are drawn from one seeded Zipf-like vocabulary (as in chat, a few words are everywhere and most are rare); each
query is a chat-sized message searched the way a turn does (``MemoryStore.memories.search``, owner trust,
current session excluded, limit 20). A run is one pass through every query (or 50 ids), its value the median
per call; the ratios are what to compare between machines.
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _report import Bench, run

from ishiki_host.store import MemoryDraft, MemoryStore

SMALL, LARGE = 100, 100_000
PROFILE = "bench"


def _vocabulary(rng: random.Random, size: int = 6000) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(size)})
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    return words, weights


def _sentence(rng: random.Random, vocab: tuple[list[str], list[float]], low: int, high: int) -> str:
    return " ".join(rng.choices(vocab[0], weights=vocab[1], k=rng.randint(low, high)))


async def _fill(store: MemoryStore, rows: int, rng: random.Random, vocab: tuple[list[str], list[float]]) -> None:
    batch = 5000
    for start in range(0, rows, batch):
        drafts = [
            MemoryDraft("fact", _sentence(rng, vocab, 8, 30), PROFILE, f"{PROFILE}/main")
            for _ in range(min(batch, rows - start))
        ]
        await store.memories.add_many(drafts)


async def _search_time(store: MemoryStore, queries: list[str], rounds: int) -> list[float]:
    """Per pass through all queries (``rounds`` passes), the median seconds per query."""
    runs = []
    for _ in range(rounds):
        samples = []
        for query in queries:
            began = time.perf_counter()
            await store.memories.search(PROFILE, query, trust="owner", exclude_session_id=1, limit=20)
            samples.append(time.perf_counter() - began)
        runs.append(statistics.median(samples))
    return runs


async def _get_time(store: MemoryStore, ids: list[int], rounds: int) -> list[float]:
    """Per pass through ``ids``, the median seconds of ``store.memories.get``."""
    runs = []
    for _ in range(rounds):
        samples = []
        for memory_id in ids:
            began = time.perf_counter()
            await store.memories.get(memory_id)
            samples.append(time.perf_counter() - began)
        runs.append(statistics.median(samples))
    return runs


def _raw_select_time(path: Path, ids: list[int], rounds: int) -> list[float]:
    """The floor: one indexed SELECT by primary key on a plain sqlite3 connection, same file, same process."""
    conn = sqlite3.connect(path)
    runs = []
    for _ in range(rounds):
        samples = []
        for memory_id in ids:
            began = time.perf_counter()
            conn.execute("SELECT id, content, created_at FROM memories WHERE id = ?", (memory_id,)).fetchone()
            samples.append(time.perf_counter() - began)
        runs.append(statistics.median(samples))
    conn.close()
    return runs


async def _measure(rows: int, queries: list[str], rounds: int, seed: int) -> dict[str, list[float]]:
    rng = random.Random(seed)
    vocab = _vocabulary(random.Random(seed))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.db"
        async with await MemoryStore.open(path) as store:
            began = time.perf_counter()
            await _fill(store, rows, rng, vocab)
            fill = time.perf_counter() - began
            ids = [rng.randint(1, rows) for _ in range(50)]
            result = {
                "fill": [fill],
                "search": await _search_time(store, queries, rounds),
                "get": await _get_time(store, ids, rounds),
                "raw": _raw_select_time(path, ids, rounds),
            }
    return result


def measure(bench: Bench) -> None:
    """Fill a small and a large store from the same seed, search both, read by id from the large one."""
    rounds = bench.runs(quick=3, full=7)
    count = 10 if bench.quick else 30
    seed = 20240601
    vocab = _vocabulary(random.Random(seed))
    query_rng = random.Random(seed + 1)
    queries = [_sentence(query_rng, vocab, 5, 15) for _ in range(count)]
    small = anyio.run(_measure, SMALL, queries, rounds, seed)
    large = anyio.run(_measure, LARGE, queries, rounds, seed)
    bench.note(f"{count} queries a run; store.get and the raw SELECT read 50 random ids a run")
    raw = {"baseline": f"raw SELECT by id @ {LARGE:,}", "baseline_samples": large["raw"]}
    bench.add(f"fill {LARGE:,} rows", "s", large["fill"], notes="one fill: MemoryStore.memories.add_many")
    bench.add(f"search @ {SMALL:,} rows", "s", small["search"])
    bench.add(f"search @ {LARGE:,} rows", "s", large["search"], baseline=f"search @ {SMALL:,} rows",
              baseline_samples=small["search"])  # fmt: skip
    bench.add(f"search @ {LARGE:,} rows", "s", large["search"], **raw)
    bench.add(f"store.get by id @ {LARGE:,}", "s", large["get"], **raw, notes="mostly the worker-thread hop")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring); ``--quick`` runs fewer queries and rounds, same row counts."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
