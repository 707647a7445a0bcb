"""FTS5 queries are rebuilt from words: user text never reaches the FTS5 parser as syntax."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ishiki_host.core.clock import FakeClock
from ishiki_host.store import MemoryStore
from ishiki_host.store.text import MAX_QUERY_TERMS, clean_text, index_text, match_query, query_terms

FTS_SYNTAX = [
    'tea" OR "coffee',
    "NEAR(tea coffee, 2)",
    "content: tea",
    "search_text:tea",
    "tea*",
    "^tea",
    "tea AND NOT coffee",
    "(tea OR",
    "{search_text}: tea",
    '"',
    '""""',
    "- tea + coffee",
]


@pytest.mark.parametrize("text", FTS_SYNTAX)
def test_syntax_becomes_quoted_words(text: str) -> None:
    query = match_query(text)
    if not any(ch.isalnum() for ch in text):
        assert query is None
        return
    assert query is not None
    for term in query.split(" OR "):
        assert term.startswith('"')
        assert term.endswith('"')
        assert '"' not in term[1:-1]
        assert term[1:-1].isalnum()


def test_terms_keep_order_and_drop_repeats_ignoring_case() -> None:
    assert query_terms("Tea, tea and TEA with Milk") == ["Tea", "and", "with", "Milk"]


def test_no_words_no_query() -> None:
    assert match_query("") is None
    assert match_query(" ?! -- 🍵 ... __ ") is None


def test_query_length_is_capped() -> None:
    text = " ".join(f"word{i}" for i in range(500))
    assert len(query_terms(text)) == MAX_QUERY_TERMS


def test_cjk_runs_become_ngrams() -> None:
    assert index_text("I went to 東京駅.") == "I went to  東 京 駅 東京 京駅 ."
    assert query_terms("東京駅 tokyo") == ["東京", "京駅", "tokyo"]
    assert query_terms("猫") == ["猫"]


# Every general category, lone surrogates and control characters (NUL) included.
ANY_CHARACTER = st.characters(categories=["L", "M", "N", "P", "S", "Z", "Cc", "Cf", "Co", "Cs"])


@pytest.mark.anyio
async def test_any_text_is_stored_and_searched_without_error(tmp_path: Path, fake_clock: FakeClock) -> None:
    """Any text can be stored and searched. Hypothesis runs in a worker thread, calling back into the loop."""
    async with await MemoryStore.open(tmp_path / "memory.db", clock=fake_clock) as store:
        for word in ("tea", "東京", "NEAR", "AND", "café"):
            await store.memories.add("fact", f"a note about {word}", profile="p", runtime_key="p/main")
        await anyio.to_thread.run_sync(_arbitrary_text_is_safe(store))
        assert await store.integrity_problems() == []


def _arbitrary_text_is_safe(store: MemoryStore) -> Callable[[], None]:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(st.text(alphabet=ANY_CHARACTER, max_size=200) | st.sampled_from(FTS_SYNTAX))
    def check(text: str) -> None:
        anyio.from_thread.run(_search_everyone, store, text)

    return check


async def _search_everyone(store: MemoryStore, text: str) -> None:
    if clean_text(text).strip():
        await store.memories.add("fact", text, profile="p", runtime_key="p/main", min_trust="untrusted")
    for trust in ("untrusted", "owner"):
        await store.memories.search("p", text, trust=trust)  # type: ignore[arg-type]


WORDS = st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzéüß東京猫犬好"), min_size=1, max_size=12)


@pytest.mark.anyio
async def test_a_memory_is_found_by_its_own_words(tmp_path: Path, fake_clock: FakeClock) -> None:
    async with await MemoryStore.open(tmp_path / "memory.db", clock=fake_clock) as store:
        await anyio.to_thread.run_sync(_found_by_own_words(store))
        assert await store.integrity_problems() == []


def _found_by_own_words(store: MemoryStore) -> Callable[[], None]:
    @settings(max_examples=150, deadline=None, database=None)
    @given(st.lists(WORDS, min_size=1, max_size=6))
    def check(words: list[str]) -> None:
        content = " ".join(words) + " !"
        memory = anyio.from_thread.run(lambda: store.memories.add("fact", content, profile="p", runtime_key="p/main"))
        hits = anyio.from_thread.run(lambda: store.memories.search("p", words[-1], trust="owner", limit=100))
        assert memory.id in [hit.memory.id for hit in hits]
        anyio.from_thread.run(store.memories.delete, memory.id)

    return check
