"""Bounded scoring: the commonest words are dropped first, the rarest word is always kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.store import MemoryDraft, MemoryStore
from ishiki_host.store.db import connect
from ishiki_host.store.repos.memory_search import CANDIDATE_BUDGET, choose_terms


def _rows(path: Path, texts: list[str]) -> None:
    conn = connect(path)
    conn.executemany(
        "INSERT INTO memories (type, content, search_text, profile, runtime_key, created_at) "
        "VALUES ('fact', ?, ?, 'p', 'p/main', 0)",
        [(text, text) for text in texts],
    )
    conn.close()


def test_rarest_terms_first_within_the_budget(db_path: Path) -> None:
    _rows(db_path, ["common"] * 30 + ["common", "common", "usual"] * 10 + ["rare"] * 2 + ["unique"])
    conn = connect(db_path)
    try:
        terms = ["common", "usual", "rare", "unique", "absent"]
        assert choose_terms(conn, terms, budget=100) == ["unique", "rare", "usual", "common"]
        assert choose_terms(conn, terms, budget=30) == ["unique", "rare", "usual"]
        assert choose_terms(conn, terms, budget=3) == ["unique", "rare"]
        assert choose_terms(conn, ["common", "usual"], budget=3) == ["usual"]  # over budget, still one word
        assert choose_terms(conn, ["absent"], budget=3) == []
    finally:
        conn.close()


@pytest.mark.anyio
async def test_a_rare_word_wins_over_thousands_of_common_rows(db_path: Path, fake_clock: FakeClock) -> None:
    async with await MemoryStore.open(db_path, clock=fake_clock) as store:
        filler = [MemoryDraft("fact", f"you said hello there {i}", "p", "p/main") for i in range(6000)]
        await store.memories.add_many(filler)
        await store.memories.add("fact", "you said the pangolin is shy", profile="p", runtime_key="p/main")
        await store.memories.add_many(filler[:100])
        hits = await store.memories.search("p", "hello, you said something about a pangolin?", trust="owner")
        assert hits[0].memory.content == "you said the pangolin is shy"
        assert len(hits) == 1  # "you", "said", "hello" are in over 6,000 rows: pruned, nothing else scored


@pytest.mark.anyio
async def test_only_common_words_rank_the_newest_matches_widened_past_the_filter(
    db_path: Path, fake_clock: FakeClock
) -> None:
    """Every word in more than CANDIDATE_BUDGET rows: the newest are ranked, the window widening while the
    filter (here the profile) leaves fewer rows than asked."""
    async with await MemoryStore.open(db_path, clock=fake_clock) as store:
        ours = [MemoryDraft("fact", f"hello there {i}", "p", "p/main") for i in range(CANDIDATE_BUDGET + 10)]
        await store.memories.add_many(ours)
        theirs = [MemoryDraft("fact", f"hello again {i}", "q", "q/main") for i in range(2 * CANDIDATE_BUDGET)]
        await store.memories.add_many(theirs)
        hits = await store.memories.search("q", "hello", trust="owner", limit=5)
        assert [hit.memory.content for hit in hits][:1] == [f"hello again {2 * CANDIDATE_BUDGET - 1}"]
        hits = await store.memories.search("p", "hello", trust="owner", limit=5)
        assert len(hits) == 5
        assert all(hit.memory.profile == "p" for hit in hits)
