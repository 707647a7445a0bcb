"""Sessions: one open per runtime, closed and rotated atomically at fact-id boundaries."""

from __future__ import annotations

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import StoreError
from ishiki_host.store import MemoryStore

pytestmark = pytest.mark.anyio

KEY = "alice/console:local/private:local"


async def test_ensure_opens_once(store: MemoryStore) -> None:
    assert await store.sessions.current(KEY) is None
    first = await store.sessions.ensure(KEY, start_fact_id=0)
    again = await store.sessions.ensure(KEY, start_fact_id=99)
    assert first == again
    assert (first.start_fact_id, first.start_reason, first.is_open) == (0, "start", True)


async def test_a_second_open_session_is_refused(store: MemoryStore) -> None:
    await store.sessions.open(KEY, start_fact_id=0)
    with pytest.raises(StoreError, match="already has an open session"):
        await store.sessions.open(KEY, start_fact_id=5)
    other = await store.sessions.open("bob/main", start_fact_id=0)
    assert other.runtime_key == "bob/main"


async def test_close_ends_the_session(store: MemoryStore, fake_clock: FakeClock) -> None:
    opened = await store.sessions.open(KEY, start_fact_id=3)
    await fake_clock.advance(30)
    closed = await store.sessions.close(KEY, end_fact_id=10, reason="evicted")
    assert (closed.id, closed.end_fact_id, closed.end_reason, closed.ended_at) == (
        opened.id,
        10,
        "evicted",
        fake_clock.now(),
    )
    assert not closed.is_open
    assert await store.sessions.current(KEY) is None
    with pytest.raises(StoreError, match="no open session"):
        await store.sessions.close(KEY, end_fact_id=11, reason="again")


async def test_an_empty_session_may_close_just_before_its_start(store: MemoryStore) -> None:
    await store.sessions.open(KEY, start_fact_id=7)
    closed = await store.sessions.close(KEY, end_fact_id=6, reason="clear")
    assert closed.end_fact_id == 6
    await store.sessions.open(KEY, start_fact_id=7)
    with pytest.raises(StoreError, match="cannot end at fact 2"):
        await store.sessions.close(KEY, end_fact_id=2, reason="clear")


async def test_rotate_closes_and_opens_with_the_seed(store: MemoryStore) -> None:
    first = await store.sessions.open(KEY, start_fact_id=0)
    closed, opened = await store.sessions.rotate(
        KEY, end_fact_id=41, start_fact_id=42, reason="compact", summary="We talked about tea."
    )
    assert closed is not None
    assert (closed.id, closed.end_fact_id, closed.end_reason) == (first.id, 41, "compact")
    assert (opened.start_fact_id, opened.start_reason, opened.summary) == (42, "compact", "We talked about tea.")
    assert await store.sessions.current(KEY) == opened
    assert [s.id for s in await store.sessions.recent(KEY)] == [opened.id, first.id]
    assert await store.sessions.get(first.id) == closed


async def test_rotate_without_an_open_session_just_opens(store: MemoryStore) -> None:
    closed, opened = await store.sessions.rotate(KEY, end_fact_id=-1, start_fact_id=0, reason="clear")
    assert closed is None
    assert opened.is_open


async def test_a_failed_rotation_changes_nothing(store: MemoryStore) -> None:
    current = await store.sessions.open(KEY, start_fact_id=10)
    with pytest.raises(StoreError, match="must start after fact 20"):
        await store.sessions.rotate(KEY, end_fact_id=20, start_fact_id=20, reason="clear")
    with pytest.raises(StoreError, match="cannot end at fact 3"):
        await store.sessions.rotate(KEY, end_fact_id=3, start_fact_id=4, reason="clear")
    assert await store.sessions.current(KEY) == current


async def test_unknown_session(store: MemoryStore) -> None:
    with pytest.raises(StoreError, match="no session with id 12"):
        await store.sessions.get(12)
