"""A reminder is recalled while its beat is to come, in its own chat; never without a beat, nor once given."""

from __future__ import annotations

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.memory.retrieval import relevant_memories
from ishiki_host.store import BeatSpec, BeatTarget, MemoryStore, MemoryType
from ishiki_host.store.repos.memory_types import MemoryScope, reminder_beat_id

pytestmark = pytest.mark.anyio

HERE = "telegram:1 private:9"
ELSEWHERE = "telegram:1 private:10"


async def add(store: MemoryStore, content: str, *, type: MemoryType = "reminder", chat: str = HERE) -> int:
    memory = await store.memories.add(type, content, profile="alice", runtime_key="k", min_trust="trusted",
                                      chats=[chat])  # fmt: skip
    return memory.id


async def beat_for(store: MemoryStore, memory_id: int, *, next_run: float | None) -> None:
    target = BeatTarget("alice", "telegram:1", "private:9")
    spec = BeatSpec(reminder_beat_id(memory_id), "call mum", "reminder", "0 18 4 12 *", target=target, recurring=False)
    await store.heartbeats.add(spec, next_run=next_run, created_by="alice/telegram:1/private:9")


async def recalled(store: MemoryStore, text: str, chat: str = HERE) -> list[str]:
    scope = MemoryScope("channel", "k", chats=(chat,))
    memories = await relevant_memories(store, profile="alice", text=text, trust="trusted", limit=10, session_id=None,
                                       scope=scope)  # fmt: skip
    return sorted(m.content for m in memories)


async def test_only_reminders_still_to_come_are_recalled(store: MemoryStore, fake_clock: FakeClock) -> None:
    pending = await add(store, "Remind Alice to call her mum on Friday.")
    await beat_for(store, pending, next_run=fake_clock.now() + 3600)
    await add(store, "Remind Alice to call her mum some day.")  # no time was named: no beat
    spent = await add(store, "Remind Alice to call her mum, last week.")
    await beat_for(store, spent, next_run=None)  # a beat that will not run again
    await add(store, "Alice's mum lives in Kyoto.", type="fact")
    assert await recalled(store, "my mum?") == [
        "Alice's mum lives in Kyoto.",
        "Remind Alice to call her mum on Friday.",
    ]
    assert await recalled(store, "my mum?", chat=ELSEWHERE) == []  # memory.scope still holds


async def test_a_reminder_whose_beat_is_gone_is_no_longer_recalled(store: MemoryStore, fake_clock: FakeClock) -> None:
    memory_id = await add(store, "Remind Alice to water the tomatoes.")
    await beat_for(store, memory_id, next_run=fake_clock.now() + 60)
    assert await recalled(store, "tomatoes") == ["Remind Alice to water the tomatoes."]
    await store.heartbeats.delete(reminder_beat_id(memory_id))  # given (a spent beat is deleted), or deleted
    assert await recalled(store, "tomatoes") == []
    assert [hit.memory.id for hit in await store.memories.search("alice", "tomatoes", trust="owner",
                                                                 types=["reminder"])] == [memory_id]  # fmt: skip
