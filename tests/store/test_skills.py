"""Learned skills: the table follows the files in one transaction; enabled state survives syncs."""

from __future__ import annotations

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import StoreError
from ishiki_host.store import MemoryStore, SkillFile

pytestmark = pytest.mark.anyio


def _skill(name: str, body: str = "v1", description: str = "does things") -> SkillFile:
    return SkillFile(name, description, f"sha256:{body}", f"skills/{name}/SKILL.md")


async def test_sync_adds_updates_and_removes(store: MemoryStore, fake_clock: FakeClock) -> None:
    first = await store.skills.sync([_skill("brew-tea"), _skill("haiku"), _skill("weather")])
    assert (first.added, first.updated, first.removed) == (["brew-tea", "haiku", "weather"], [], [])
    await fake_clock.advance(10)
    second = await store.skills.sync([_skill("brew-tea", body="v2"), _skill("haiku"), _skill("origami")])
    assert (second.added, second.updated, second.removed) == (["origami"], ["brew-tea"], ["weather"])
    skills = {s.name: s for s in await store.skills.all()}
    assert sorted(skills) == ["brew-tea", "haiku", "origami"]
    assert skills["brew-tea"].body_hash == "sha256:v2"
    assert skills["brew-tea"].updated_at == fake_clock.now()
    assert skills["haiku"].updated_at == fake_clock.now() - 10
    unchanged = await store.skills.sync([_skill("brew-tea", body="v2"), _skill("haiku"), _skill("origami")])
    assert not unchanged.changed


async def test_enabled_survives_a_sync(store: MemoryStore) -> None:
    await store.skills.sync([_skill("haiku")])
    assert await store.skills.set_enabled("haiku", False)
    assert not await store.skills.set_enabled("missing", False)
    await store.skills.sync([_skill("haiku", description="writes haiku")])
    skill = await store.skills.get("haiku")
    assert skill is not None
    assert (skill.enabled, skill.description) == (False, "writes haiku")


async def test_a_bad_set_changes_nothing(store: MemoryStore) -> None:
    await store.skills.sync([_skill("haiku")])
    with pytest.raises(StoreError, match="repeated: weather"):
        await store.skills.sync([_skill("weather"), _skill("weather", body="v2")])
    assert [s.name for s in await store.skills.all()] == ["haiku"]
    assert await store.skills.get("weather") is None
