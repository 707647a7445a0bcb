"""Memory retrieval time with 100 vs 100,000 rows, against a raw SQLite SELECT by id in the same run.

Run: ``.venv/bin/python bench/memory_retrieval.py [--quick] [--runs N] [--json PATH]``. Memories and queries
are drawn from one seeded Zipf-like vocabulary (as in chat, a few words are everywhere and most are rare); each
query is a chat-sized message searched the way a turn does (``MemoryStore.memories.search``, owner trust,
current session excluded, limit 20). A run is one pass through every query (or 50 ids), its value the median
per call; the ratios are what to compare between machines.

Hybrid recall (issue 26) is measured on the same stores: every memory embedded by the background backlog with
the test kit's ``ConceptEmbedder`` (128 dimensions), then ``relevant_memories`` with the query's vector (the
embeddings call itself is the model's time, left out), against the same at 100 rows, and the vector index
alone (``store.vectors.nearest``) against a full scan of the 100,000 vectors (read, decode, dot: what a
store without an index pays). How much the index finds of the exact scan's top 20 is reported beside, and how
often it finds a memory from a query that says the same with a third of its words dropped.
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

from ishiki_host.memory.embedding import EmbeddingBacklog
from ishiki_host.memory.retrieval import VectorQuery, relevant_memories
from ishiki_host.store import MemoryDraft, MemoryStore
from ishiki_host.store.vectors import decode, dot, normalized
from ishiki_host.testing.embeddings import ConceptEmbedder

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


async def _recall_time(store: MemoryStore, queries: list[str], rounds: int, kit: ConceptEmbedder) -> list[float]:
    """Per pass, the median seconds of a turn's hybrid recall (the query vectors made beforehand)."""
    vectors = [(query, (await kit.embed([query])).vectors[0]) for query in queries]
    runs = []
    for _ in range(rounds):
        samples = []
        for query, vector in vectors:
            began = time.perf_counter()
            await relevant_memories(store, profile=PROFILE, text=query, trust="owner", limit=20, session_id=1,
                                    vector=VectorQuery(kit.name, vector, store.clock.now()))  # fmt: skip
            samples.append(time.perf_counter() - began)
        runs.append(statistics.median(samples))
    return runs


async def _nearest(store: MemoryStore, vector: tuple[float, ...], kit: ConceptEmbedder) -> list[int]:
    where = store.memories.search_filter(PROFILE, trust="owner", limit=20, exclude_session_id=1)
    return [hit.memory.id for hit in await store.vectors.nearest(kit.name, vector, where)]


async def _nearest_time(store: MemoryStore, queries: list[str], rounds: int, kit: ConceptEmbedder) -> list[float]:
    """Per pass, the median seconds of the vector index's 20 nearest."""
    vectors = [(await kit.embed([query])).vectors[0] for query in queries]
    runs = []
    for _ in range(rounds):
        samples = []
        for vector in vectors:
            began = time.perf_counter()
            await _nearest(store, vector, kit)
            samples.append(time.perf_counter() - began)
        runs.append(statistics.median(samples))
    return runs


def _scan(path: Path, vector: tuple[float, ...]) -> list[int]:
    """The exact 20 nearest by a full scan: every vector of the profile read, decoded and compared."""
    query = normalized(vector)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT memory_id, vector FROM memory_vectors WHERE profile = ?", (PROFILE,))
        scored = sorted(((dot(query, decode(blob)), memory_id) for memory_id, blob in rows), reverse=True)
    return [memory_id for _, memory_id in scored[:20]]


async def _scan_figures(
    store: MemoryStore, path: Path, queries: list[str], rounds: int, kit: ConceptEmbedder
) -> dict[str, list[float]]:
    """Full-scan seconds per query (median per pass), and the share of the scan's top 20 the index finds."""
    vectors = [(await kit.embed([query])).vectors[0] for query in queries]
    runs, found = [], []
    for _ in range(rounds):
        samples = []
        for vector in vectors:
            began = time.perf_counter()
            _scan(path, vector)
            samples.append(time.perf_counter() - began)
        runs.append(statistics.median(samples))
    for vector in vectors:
        exact = set(_scan(path, vector))
        found.append(len(exact & set(await _nearest(store, vector, kit))) / len(exact))
    return {"scan": runs, "index_share": [statistics.mean(found)], "near_found": [await _near_found(store, kit)]}


async def _near_found(store: MemoryStore, kit: ConceptEmbedder, count: int = 40) -> float:
    """The share of ``count`` stored memories the index returns among the 20 nearest to a query made of that
    memory with a third of its words dropped (what "the same, said again" looks like to it)."""
    rng = random.Random(7)
    found = 0
    for memory_id in rng.sample(range(1, LARGE + 1), count):
        memory = await store.memories.get(memory_id)
        assert memory is not None
        words = memory.content.split()
        kept = [word for word in words if rng.random() > 1 / 3] or words[:1]
        found += memory_id in await _nearest(store, (await kit.embed([" ".join(kept)])).vectors[0], kit)
    return found / count


async def _measure(
    rows: int, queries: list[str], rounds: int, seed: int, scan_queries: int = 0
) -> dict[str, list[float]]:
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
            kit = ConceptEmbedder()
            began = time.perf_counter()
            if not await EmbeddingBacklog(store.vectors, kit, PROFILE, batch=1000).drain():
                raise RuntimeError("the backlog did not embed every memory")
            result["embed"] = [time.perf_counter() - began]
            result["hybrid"] = await _recall_time(store, queries, rounds, kit)
            result["nearest"] = await _nearest_time(store, queries, rounds, kit)
            if scan_queries:
                result.update(await _scan_figures(store, path, queries[:scan_queries], rounds, kit))
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
    large = anyio.run(_measure, LARGE, queries, rounds, seed, 3 if bench.quick else 10)
    bench.note(f"{count} queries a run; store.get and the raw SELECT read 50 random ids a run")
    raw = {"baseline": f"raw SELECT by id @ {LARGE:,}", "baseline_samples": large["raw"]}
    bench.add(f"fill {LARGE:,} rows", "s", large["fill"], notes="one fill: MemoryStore.memories.add_many")
    bench.add(f"search @ {SMALL:,} rows", "s", small["search"])
    bench.add(f"search @ {LARGE:,} rows", "s", large["search"], baseline=f"search @ {SMALL:,} rows",
              baseline_samples=small["search"])  # fmt: skip
    bench.add(f"search @ {LARGE:,} rows", "s", large["search"], **raw)
    bench.add(f"store.get by id @ {LARGE:,}", "s", large["get"], **raw, notes="mostly the worker-thread hop")
    bench.add(f"embed {LARGE:,} rows (backlog)", "s", large["embed"],
              notes="one pass of the backlog: ConceptEmbedder in-process, signatures, inserts")  # fmt: skip
    bench.add(f"hybrid recall @ {SMALL:,} rows", "s", small["hybrid"])
    bench.add(f"hybrid recall @ {LARGE:,} rows", "s", large["hybrid"], baseline=f"hybrid recall @ {SMALL:,} rows",
              baseline_samples=small["hybrid"], target="<= 2")  # fmt: skip
    bench.add(f"hybrid recall @ {LARGE:,} rows", "s", large["hybrid"], **raw)
    bench.add(f"hybrid recall @ {LARGE:,} rows", "s", large["hybrid"], baseline=f"full-text search @ {LARGE:,}",
              baseline_samples=large["search"])  # fmt: skip
    bench.add(f"vector index @ {LARGE:,} rows", "s", large["nearest"], baseline=f"vector index @ {SMALL:,} rows",
              baseline_samples=small["nearest"])  # fmt: skip
    bench.add(f"vector scan @ {LARGE:,} rows", "s", large["scan"], baseline=f"vector index @ {LARGE:,} rows",
              baseline_samples=large["nearest"], notes="what a store without an index pays per query")  # fmt: skip
    bench.add(f"index's share of the exact top 20 @ {LARGE:,}", "share", large["index_share"], direction="higher",
              notes="random queries, whose exact neighbours are far: the hash index is approximate")  # fmt: skip
    bench.add(f"index finds a memory said again @ {LARGE:,}", "share", large["near_found"], direction="higher",
              notes="40 memories, each queried with a third of its words dropped; among the 20 nearest")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring); ``--quick`` runs fewer queries and rounds, same row counts."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
