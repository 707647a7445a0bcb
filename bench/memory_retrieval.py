"""Memory retrieval time with 100 vs 100,000 rows, against a raw SQLite SELECT by id in the same run.

Run: ``.venv/bin/python bench/memory_retrieval.py [--quick]``. Memories and queries are drawn from one seeded
Zipf-like vocabulary (as in chat, a few words are everywhere and most are rare); each query is a chat-sized
message searched the way a turn does (``MemoryStore.memories.search``, owner trust, current session excluded,
limit 20). Figures are medians of several rounds; the ratios are what to compare between machines.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from ishiki_host.memory import MemoryDraft, MemoryStore

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


async def _search_time(store: MemoryStore, queries: list[str], rounds: int) -> float:
    """Median seconds per query over ``rounds`` passes through all queries."""
    samples = []
    for _ in range(rounds):
        for query in queries:
            began = time.perf_counter()
            await store.memories.search(PROFILE, query, trust="owner", exclude_session_id=1, limit=20)
            samples.append(time.perf_counter() - began)
    return statistics.median(samples)


async def _get_time(store: MemoryStore, ids: list[int], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        for memory_id in ids:
            began = time.perf_counter()
            await store.memories.get(memory_id)
            samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def _raw_select_time(path: Path, ids: list[int], rounds: int) -> float:
    """The floor: one indexed SELECT by primary key on a plain sqlite3 connection, same file, same process."""
    conn = sqlite3.connect(path)
    samples = []
    for _ in range(rounds):
        for memory_id in ids:
            began = time.perf_counter()
            conn.execute("SELECT id, content, created_at FROM memories WHERE id = ?", (memory_id,)).fetchone()
            samples.append(time.perf_counter() - began)
    conn.close()
    return statistics.median(samples)


async def _measure(rows: int, queries: list[str], rounds: int, seed: int) -> dict[str, float]:
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
                "fill": fill,
                "search": await _search_time(store, queries, rounds),
                "get": await _get_time(store, ids, rounds),
                "raw": _raw_select_time(path, ids, rounds),
            }
    return result


def main() -> None:
    """Measure and print the figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries and rounds (same row counts)")
    args = parser.parse_args()
    rounds, count = (3, 10) if args.quick else (7, 30)
    seed = 20240601
    vocab = _vocabulary(random.Random(seed))
    query_rng = random.Random(seed + 1)
    queries = [_sentence(query_rng, vocab, 5, 15) for _ in range(count)]
    small = anyio.run(_measure, SMALL, queries, rounds, seed)
    large = anyio.run(_measure, LARGE, queries, rounds, seed)
    print(f"memory retrieval ({'quick' if args.quick else 'full'}: {count} queries x {rounds} rounds, medians)")
    print(f"  fill {LARGE:>7,} rows           {large['fill']:8.2f} s")
    for label, figures in ((f"{SMALL:,}", small), (f"{LARGE:,}", large)):
        print(f"  search @ {label:>7} rows      {figures['search'] * 1e3:8.3f} ms")
    print(f"  store.get by id @ {LARGE:,}  {large['get'] * 1e3:8.3f} ms")
    print(f"  raw SELECT by id @ {LARGE:,} {large['raw'] * 1e3:8.3f} ms   (baseline)")
    print(f"  ratio search {LARGE:,} / {SMALL:,} rows:   {large['search'] / small['search']:8.1f}x")
    print(f"  ratio search @ {LARGE:,} / raw SELECT:  {large['search'] / large['raw']:8.1f}x")
    print(f"  ratio store.get / raw SELECT (thread hop): {large['get'] / large['raw']:6.1f}x")


if __name__ == "__main__":
    main()
