"""Hybrid recall: full-text and vector rankings fused by reciprocal rank, weighted by recency and type.

Each ranking (FTS5 BM25 over the words, cosine similarity over the embeddings) gives a memory
``1 / (RRF_K + rank)``; a memory found by both gets both. Reciprocal-rank fusion needs no calibration between
the two scores (a BM25 value and a cosine are not comparable), and a memory near the top of either list comes
out near the top. The fused score is then multiplied by:

- the memory's type weight (``TYPE_WEIGHTS``: a session ``summary`` is broad, so a ``fact`` or ``lesson`` that
  matches as well comes first);
- its recency: ``1 - RECENCY_SHARE`` plus ``RECENCY_SHARE`` halved every ``HALF_LIFE_DAYS`` of age, so an
  old memory loses at most a quarter of its score: what was said long ago is still recalled when it is the
  best match, and of two equal matches the newer wins.

Ties go to the newer memory, as in the full-text search.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host.store.repos.memory_types import Memory, MemoryType

__all__ = ["HALF_LIFE_DAYS", "RECENCY_SHARE", "RRF_K", "TYPE_WEIGHTS", "fuse", "weight"]

RRF_K = 60
HALF_LIFE_DAYS = 30.0
RECENCY_SHARE = 0.25
TYPE_WEIGHTS: Mapping[MemoryType, float] = {"fact": 1.0, "lesson": 1.0, "reminder": 1.0, "summary": 0.85}
_DAY = 86_400.0


def weight(memory: Memory, now: float) -> float:
    """The type and recency factor of ``memory`` at time ``now`` (see the module docstring)."""
    age_days = max(0.0, now - memory.created_at) / _DAY
    recency = 1.0 - RECENCY_SHARE + RECENCY_SHARE * math.pow(0.5, age_days / HALF_LIFE_DAYS)
    return TYPE_WEIGHTS.get(memory.type, 1.0) * recency


def fuse(rankings: Sequence[Sequence[Memory]], *, now: float, limit: int) -> list[Memory]:
    """The best ``limit`` memories of ``rankings`` (each best first), fused as the module docstring says."""
    scores: dict[int, float] = {}
    memories: dict[int, Memory] = {}
    for ranking in rankings:
        for rank, memory in enumerate(ranking, start=1):
            scores[memory.id] = scores.get(memory.id, 0.0) + 1.0 / (RRF_K + rank)
            memories[memory.id] = memory
    fused = {mid: score * weight(memories[mid], now) for mid, score in scores.items()}
    ordered = sorted(memories.values(), key=lambda m: (-fused[m.id], -m.created_at, -m.id))
    return ordered[: max(0, limit)]
