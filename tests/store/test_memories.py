"""Memories: add and list with caps, trust and profile isolation, FTS5 search ranked by BM25 then recency."""

from __future__ import annotations

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import StoreError
from ishiki_host.store import MemoryDraft, MemoryStore
from ishiki_host.store.repos.memory_types import MAX_LIST

pytestmark = pytest.mark.anyio

RUNTIME = "alice/console:local/private:local"


async def _add(store: MemoryStore, content: str, **kw: object) -> int:
    memory = await store.memories.add(
        kw.pop("type", "fact"),  # type: ignore[arg-type]
        content,
        profile=str(kw.pop("profile", "alice")),
        runtime_key=str(kw.pop("runtime_key", RUNTIME)),
        **kw,  # type: ignore[arg-type]
    )
    return memory.id


async def _search(store: MemoryStore, text: str, **kw: object) -> list[str]:
    hits = await store.memories.search(str(kw.pop("profile", "alice")), text, trust=kw.pop("trust", "owner"), **kw)  # type: ignore[arg-type]
    return [hit.memory.content for hit in hits]


async def test_add_returns_the_stored_row(store: MemoryStore, fake_clock: FakeClock) -> None:
    memory = await store.memories.add(
        "lesson", "  Say good night in Japanese.  ", profile="alice", runtime_key=RUNTIME, importance=0.9
    )
    assert memory.content == "Say good night in Japanese."
    assert (memory.type, memory.importance, memory.min_trust, memory.created_at) == (
        "lesson",
        0.9,
        "owner",
        fake_clock.now(),
    )
    assert await store.memories.get(memory.id) == memory
    assert await store.memories.get(memory.id + 1) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": "diary"}, "memory type 'diary' is not one of summary, fact, lesson, reminder"),
        ({"content": "   "}, "cannot be empty"),
        ({"importance": 1.5}, "importance 1.5 is not between 0 and 1"),
        ({"min_trust": "admin"}, "min_trust 'admin'"),
        ({"profile": ""}, "needs the profile"),
    ],
)
async def test_bad_memories_are_refused_by_name(store: MemoryStore, kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"type": "fact", "content": "x", "profile": "alice", "runtime_key": RUNTIME}
    fields.update(kwargs)
    with pytest.raises(StoreError, match=message):
        await store.memories.add_many([MemoryDraft(**fields)])  # type: ignore[arg-type]
    assert await store.memories.count("alice") == 0


async def test_latest_is_newest_first_filtered_and_capped(store: MemoryStore, fake_clock: FakeClock) -> None:
    drafts = [MemoryDraft("fact", f"fact {i}", "alice", RUNTIME) for i in range(60)]
    await store.memories.add_many(drafts)
    await fake_clock.advance(1)
    await _add(store, "a lesson", type="lesson")
    latest = await store.memories.latest("alice", trust="owner", count=3)
    assert [m.content for m in latest] == ["a lesson", "fact 59", "fact 58"]
    assert len(await store.memories.latest("alice", trust="owner", count=500)) == MAX_LIST
    assert len(await store.memories.latest("alice", trust="owner", count=0)) == 1
    lessons = await store.memories.latest("alice", trust="owner", types=["lesson"])
    assert [m.content for m in lessons] == ["a lesson"]
    assert await store.memories.count("alice") == 61
    assert await store.memories.count("alice", types=["lesson", "summary"]) == 1


async def test_untrusted_readers_never_get_owner_memories(store: MemoryStore) -> None:
    await _add(store, "the owner's address is 1 Tea Street", min_trust="owner")
    await _add(store, "the trusted friend likes tea", min_trust="trusted")
    await _add(store, "everyone may know the bot likes tea", min_trust="untrusted")
    assert await _search(store, "tea", trust="untrusted") == ["everyone may know the bot likes tea"]
    assert sorted(await _search(store, "tea", trust="trusted")) == [
        "everyone may know the bot likes tea",
        "the trusted friend likes tea",
    ]
    assert len(await _search(store, "tea", trust="owner")) == 3
    assert [m.min_trust for m in await store.memories.latest("alice", trust="untrusted")] == ["untrusted"]
    with pytest.raises(StoreError, match="trust level 'guest'"):
        await store.memories.latest("alice", trust="guest")  # type: ignore[arg-type]


async def test_profiles_do_not_share_memories(store: MemoryStore) -> None:
    await _add(store, "alice's cat is called Miso")
    await _add(store, "bob's cat is called Nori", profile="bob", runtime_key="bob/main")
    assert await _search(store, "cat") == ["alice's cat is called Miso"]
    assert await _search(store, "cat", profile="bob") == ["bob's cat is called Nori"]


async def test_bm25_ranks_more_and_rarer_matches_first(store: MemoryStore, fake_clock: FakeClock) -> None:
    for i in range(20):
        await _add(store, f"filler note {i} about the weather")
    await _add(store, "Mika plays the violin in an orchestra")
    await _add(store, "the orchestra rehearses on Fridays")
    await fake_clock.advance(60)
    await _add(store, "the weather was nice")
    assert (await _search(store, "Does Mika still play violin in the orchestra?"))[:2] == [
        "Mika plays the violin in an orchestra",
        "the orchestra rehearses on Fridays",
    ]


async def test_equally_relevant_memories_come_newest_first(store: MemoryStore, fake_clock: FakeClock) -> None:
    ids = []
    # The same fact noted three times, the oldest the shortest: float noise must not beat recency.
    for note in ("Ren likes green tea", "Ren likes green tea a lot", "Ren really likes green tea, a lot"):
        ids.append(await _add(store, note))
        await fake_clock.advance(86_400)
    await _add(store, "something unrelated")
    hits = await store.memories.search("alice", "green tea", trust="owner")
    assert [hit.memory.id for hit in hits] == ids[::-1]


async def test_search_filters(store: MemoryStore) -> None:
    session = await store.sessions.ensure(RUNTIME, start_fact_id=0)
    await _add(store, "tea in the current session", session_id=session.id)
    await _add(store, "tea in no session")
    await _add(store, "tea reminder: buy more", type="reminder")
    await _add(store, "tea in another runtime", runtime_key="alice/telegram:1/group:2")
    found = await _search(store, "tea", exclude_session_id=session.id)
    assert sorted(found) == ["tea in another runtime", "tea in no session"]
    assert await _search(store, "reminder") == []  # reminders are left out by default
    assert await _search(store, "reminder", types=["reminder"]) == ["tea reminder: buy more"]
    assert await _search(store, "tea", runtime_key="alice/telegram:1/group:2") == ["tea in another runtime"]
    assert len(await _search(store, "tea", limit=1)) == 1


async def test_text_without_words_finds_nothing(store: MemoryStore) -> None:
    await _add(store, "tea")
    assert await _search(store, "") == []
    assert await _search(store, "?!... :-) 🍵") == []


async def test_stemming_diacritics_and_case(store: MemoryStore) -> None:
    await _add(store, "Yui REMEMBERED the Café on the corner")
    assert await _search(store, "remembering cafe") == ["Yui REMEMBERED the Café on the corner"]


async def test_japanese_and_chinese_words_are_found_inside_sentences(store: MemoryStore) -> None:
    await _add(store, "私は先週東京に行きました")
    await _add(store, "猫が好きです")
    await _add(store, "我喜欢喝绿茶")
    await _add(store, "서울에서 왔어요")
    assert await _search(store, "東京") == ["私は先週東京に行きました"]
    assert await _search(store, "猫") == ["猫が好きです"]
    assert await _search(store, "绿茶") == ["我喜欢喝绿茶"]
    assert await _search(store, "서울") == ["서울에서 왔어요"]
    assert (await _search(store, "東京に行きたいです"))[0] == "私は先週東京に行きました"


async def test_deleted_memories_leave_the_index(store: MemoryStore) -> None:
    memory_id = await _add(store, "a secret to forget")
    assert await store.memories.delete(memory_id)
    assert not await store.memories.delete(memory_id)
    assert await _search(store, "secret") == []
    assert await store.integrity_problems() == []


async def test_text_sqlite_cannot_store_is_cleaned(store: MemoryStore) -> None:
    memory_id = await _add(store, "nul\x00byte and a lone \ud800 surrogate")
    memory = await store.memories.get(memory_id)
    assert memory is not None
    assert memory.content == "nulbyte and a lone \ufffd surrogate"
    assert await _search(store, "nulbyte \ud800") == [memory.content]
