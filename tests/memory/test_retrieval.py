"""Retrieval: the most relevant memories for a turn, never the current session, reminders or owner notes."""

from __future__ import annotations

from typing import Any

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.tools import TrustLevel
from ishiki_host.memory.retrieval import (
    MEMORY_HEADER,
    RetrievalSettings,
    memory_section,
    query_text,
    relevant_memories,
)
from ishiki_host.store import MemoryStore, MemoryType

pytestmark = pytest.mark.anyio


def said(text: str, name: str | None = None) -> Entry:
    user: dict[str, Any] = {"id": "42", **({"name": name} if name else {})}
    source = {"platform": "telegram", "user": user}
    return Entry(1, "message", 0.0, {"role": "user", "parts": [{"type": "text", "text": text}], "source": source})


async def add(
    store: MemoryStore, content: str, *, type: MemoryType = "fact", trust: TrustLevel = "untrusted",
    session: int | None = None, profile: str = "alice",
) -> int:  # fmt: skip
    memory = await store.memories.add(type, content, profile=profile, runtime_key="k", session_id=session,
                                      min_trust=trust)  # fmt: skip
    return memory.id


async def search(store: MemoryStore, text: str, **kwargs: Any) -> list[str]:
    options: dict[str, Any] = {"profile": "alice", "trust": "owner", "limit": 20, "session_id": None, **kwargs}
    return [m.content for m in await relevant_memories(store, text=text, **options)]


async def test_the_most_relevant_first_then_the_newest(store: MemoryStore, fake_clock: FakeClock) -> None:
    await add(store, "Ana likes green tea")
    await fake_clock.advance(60)
    await add(store, "Bob likes coffee")
    await fake_clock.advance(60)
    await add(store, "Ana buys her tea in Uji")
    await fake_clock.advance(60)
    await add(store, "Ana likes green tea")
    found = await search(store, "Does Ana still buy tea in Uji?")
    assert found[0] == "Ana buys her tea in Uji"  # the rare word wins
    assert found[1:] == ["Ana likes green tea", "Ana likes green tea"]
    ids = [m.id for m in await relevant_memories(store, profile="alice", text="green tea", trust="owner", limit=5,
                                                 session_id=None)]  # fmt: skip
    assert ids[0] == 4  # 4 and 1 say the same: the newest first
    assert sorted(ids) == [1, 3, 4]
    assert await search(store, "Does Ana still buy tea in Uji?", limit=1) == found[:1]


async def test_never_the_current_session_nor_reminders(store: MemoryStore) -> None:
    session = await store.sessions.open("k", start_fact_id=1)
    await add(store, "tea in this very session", session=session.id)
    await add(store, "remind Ana about tea", type="reminder")
    await add(store, "tea summary", type="summary")
    await add(store, "tea lesson", type="lesson")
    assert sorted(await search(store, "tea", session_id=session.id)) == ["tea lesson", "tea summary"]
    assert "tea in this very session" in await search(store, "tea", session_id=None)


async def test_untrusted_senders_never_get_the_owners_memories(store: MemoryStore) -> None:
    await add(store, "the owner's address is 5 Tea Street", trust="owner")
    await add(store, "a trusted friend likes tea", trust="trusted")
    await add(store, "someone in the group asked about tea", trust="untrusted")
    assert await search(store, "tea address", trust="untrusted") == ["someone in the group asked about tea"]
    assert sorted(await search(store, "tea address", trust="trusted")) == [
        "a trusted friend likes tea",
        "someone in the group asked about tea",
    ]
    assert len(await search(store, "tea address", trust="owner")) == 3


async def test_excluded_ids_and_other_profiles(store: MemoryStore) -> None:
    seed = await add(store, "summary about tea", type="summary")
    await add(store, "tea fact")
    await add(store, "bob's tea", profile="bob")
    assert await search(store, "tea", exclude_ids=[seed]) == ["tea fact"]
    assert await search(store, "tea", exclude_ids=[seed], limit=1) == ["tea fact"]


async def test_the_section(store: MemoryStore, fake_clock: FakeClock) -> None:
    await add(store, "Ana   likes\ngreen tea")
    section = await memory_section(
        store, [said("Which tea, Ana?")], profile="alice", trust="untrusted", limit=20, session_id=None
    )
    assert section == f"{MEMORY_HEADER}\n- (2023-11-14, fact) Ana likes green tea"
    nothing = await memory_section(store, [said("coffee?")], profile="alice", trust="owner", limit=20, session_id=None)
    assert nothing is None
    off = await memory_section(store, [said("tea")], profile="alice", trust="owner", limit=0, session_id=None)
    assert off is None
    assert await memory_section(store, [], profile="alice", trust="owner", limit=5, session_id=None) is None


def test_the_query_is_what_the_new_messages_say() -> None:
    assert query_text([said("hello", name="Ana"), said("tea?")]) == "[Ana (telegram:42)] hello\n[telegram:42] tea?"
    assert len(query_text([said("x" * 10_000)])) == 4_000


def test_settings_from_ishiki_yaml() -> None:
    assert RetrievalSettings.from_host({}).limit == 20
    assert RetrievalSettings.from_host({"limit": 5}).limit == 5
    assert RetrievalSettings.from_host({"limit": 10_000}).limit == 100
    assert RetrievalSettings.from_host({"limit": -1}).limit == 0
    with pytest.raises(ValueError, match="whole number"):
        RetrievalSettings.from_host({"limit": "many"})
    with pytest.raises(ValueError, match="whole number"):
        RetrievalSettings.from_host({"limit": True})
