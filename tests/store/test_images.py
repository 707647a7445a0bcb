"""Images: metadata rows; deleting old ones reports what went so the caller removes the files."""

from __future__ import annotations

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import StoreError
from ishiki_host.store import MemoryStore

pytestmark = pytest.mark.anyio

KEY = "alice/telegram:1/private:9"


async def _add(store: MemoryStore, name: str, size: int = 10, key: str = KEY) -> None:
    await store.images.add(key, f"asset://{name}", path=f"runtimes/x/{name}", media_type="image/png", size=size)


async def test_add_get_and_replace(store: MemoryStore, fake_clock: FakeClock) -> None:
    await _add(store, "a.png", size=10)
    await fake_clock.advance(5)
    await _add(store, "a.png", size=20)
    record = await store.images.get(KEY, "asset://a.png")
    assert record is not None
    assert (record.size, record.created_at, record.media_type) == (20, fake_clock.now(), "image/png")
    assert len(await store.images.for_runtime(KEY)) == 1
    assert await store.images.get("other/main", "asset://a.png") is None


async def test_delete_older_than_returns_what_it_removed(store: MemoryStore, fake_clock: FakeClock) -> None:
    await _add(store, "old1.png")
    await _add(store, "old2.png", key="bob/main")
    await fake_clock.advance(3600)
    await _add(store, "new.png")
    await fake_clock.advance(60)
    removed = await store.images.delete_older_than(600)
    assert [(r.runtime_key, r.url, r.path) for r in removed] == [
        (KEY, "asset://old1.png", "runtimes/x/old1.png"),
        ("bob/main", "asset://old2.png", "runtimes/x/old2.png"),
    ]
    assert [r.url for r in await store.images.for_runtime(KEY)] == ["asset://new.png"]
    assert await store.images.delete_older_than(600) == []


async def test_delete_one(store: MemoryStore) -> None:
    await _add(store, "a.png")
    removed = await store.images.delete(KEY, "asset://a.png")
    assert removed is not None
    assert removed.path == "runtimes/x/a.png"
    assert await store.images.delete(KEY, "asset://a.png") is None


async def test_bad_records_are_refused(store: MemoryStore) -> None:
    with pytest.raises(StoreError, match="size -1 is negative"):
        await _add(store, "a.png", size=-1)
    with pytest.raises(StoreError, match="runtime key, asset URL and path"):
        await store.images.add(KEY, "", path="x", media_type="image/png", size=1)
