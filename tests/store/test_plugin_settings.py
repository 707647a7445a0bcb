"""Plugin settings: a profile's row beats the global row, which beats the caller's default."""

from __future__ import annotations

import pytest

from ishiki_host.errors import StoreError
from ishiki_host.store import MemoryStore

pytestmark = pytest.mark.anyio


async def test_precedence(store: MemoryStore) -> None:
    settings = store.plugin_settings
    assert await settings.is_enabled("tool", "web_search", profile="alice")
    assert not await settings.is_enabled("tool", "web_search", profile="alice", default=False)
    await settings.set("tool", "web_search", False)
    assert not await settings.is_enabled("tool", "web_search", profile="alice")
    assert not await settings.is_enabled("tool", "web_search", profile=None)
    await settings.set("tool", "web_search", True, profile="alice")
    assert await settings.is_enabled("tool", "web_search", profile="alice")
    assert not await settings.is_enabled("tool", "web_search", profile="bob")
    assert await settings.unset("tool", "web_search", profile="alice")
    assert not await settings.is_enabled("tool", "web_search", profile="alice")
    assert await settings.unset("tool", "web_search")
    assert not await settings.unset("tool", "web_search")
    assert await settings.is_enabled("tool", "web_search", profile="alice")


async def test_set_is_an_upsert_per_scope(store: MemoryStore) -> None:
    settings = store.plugin_settings
    await settings.set("extension", "memory", False)
    await settings.set("extension", "memory", True)
    await settings.set("extension", "memory", False, profile="alice")
    await settings.set("extension", "memory", False, profile="alice")
    rows = await settings.all(profile="alice")
    assert [(r.profile, r.name, r.enabled) for r in rows] == [(None, "memory", True), ("alice", "memory", False)]
    assert [(r.profile, r.name) for r in await settings.all()] == [(None, "memory")]


async def test_effective_map_for_a_turn(store: MemoryStore) -> None:
    settings = store.plugin_settings
    await settings.set("tool", "a", False)
    await settings.set("tool", "b", False)
    await settings.set("tool", "b", True, profile="alice")
    await settings.set("tool", "c", False, profile="bob")
    await settings.set("channel", "a", True)
    assert await settings.effective("tool", profile="alice") == {"a": False, "b": True}
    assert await settings.effective("tool", profile="bob") == {"a": False, "b": False, "c": False}
    remembered = await settings.effective("tool", profile="bob")
    remembered["a"] = True  # a caller's copy: what the repository remembers stays as stored
    assert (await settings.effective("tool", profile="bob"))["a"] is False
    assert [r.kind for r in await settings.all(kind="channel")] == ["channel"]


async def test_bad_keys_are_refused(store: MemoryStore) -> None:
    with pytest.raises(StoreError, match="plugin kind 'engine'"):
        await store.plugin_settings.set("engine", "x", True)  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="needs a name"):
        await store.plugin_settings.set("tool", "", True)
    with pytest.raises(StoreError, match="or None for the global"):
        await store.plugin_settings.set("tool", "x", True, profile="")
