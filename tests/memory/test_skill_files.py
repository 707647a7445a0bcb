"""Learned skills from disk: scanning, syncing on change, the prompt section and the skill:// scheme."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ishiki_host.errors import ResourceError, SkillInvalid
from ishiki_host.memory.skills import (
    SKILL_TRUST,
    SKILLS_HEADER,
    SkillScheme,
    SkillsWatcher,
    enabled_names,
    parse_skill,
    profile_skills,
    scan_skills,
    skills_section,
)
from ishiki_host.resources import ResourceCenter, ResourceRequest, parse_resource_url
from ishiki_host.store import MemoryStore

pytestmark = pytest.mark.anyio


def write(config: Path, folder: str, text: str | bytes) -> Path:
    path = config / "skills" / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def skill(name: str, description: str = "Does a thing.", body: str = "# Steps\n1. Do it.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def test_parse_front_matter_and_body() -> None:
    meta, body = parse_skill("\ufeff---\nname: tea\ndescription: Brew tea.\nextra: 1\n---\nBody\n", where="x")
    assert (meta["name"], meta["extra"], body) == ("tea", 1, "Body\n")
    with pytest.raises(SkillInvalid, match="x: no front matter"):
        parse_skill("# Just markdown\n", where="x")
    with pytest.raises(SkillInvalid, match="x:3: invalid YAML"):
        parse_skill("---\nname: [unclosed\n---\n", where="x")
    with pytest.raises(SkillInvalid, match="x:2: description: front matter key 'description' must be a non-empty"):
        parse_skill("---\nname: tea\n---\n", where="x")
    with pytest.raises(SkillInvalid, match="must be a mapping"):
        parse_skill("---\n- a list\n---\n", where="x")
    with pytest.raises(SkillInvalid, match="x:3: name: duplicate key 'name'"):
        parse_skill("---\nname: tea\nname: coffee\ndescription: Brew.\n---\n", where="x")


LAUGHS = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 7)
)  # an alias bomb: 10**7 values from a few hundred bytes


def deep_front_matter(name: str) -> str:
    """A front matter nested 600 deep: 1.2 KB that used to exhaust the parser's recursion."""
    return f"---\nname: {name}\ndescription: Deep.\nextra: {'[' * 600}{']' * 600}\n---\nBody\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (deep_front_matter("deep"), "x:4: nested deeper than 64 levels"),
        ("---\nname: n\ndescription: d\nsize: " + "9" * 5000 + "\n---\n", "x:4: size: an integer of 5,000 characters"),
        ("---\nname: n\ndescription: d\n" + LAUGHS + "---\n", "more than 100,000 values after alias expansion"),
    ],
)
def test_hostile_front_matter_is_a_skill_error_not_a_crash(text: str, message: str) -> None:
    with pytest.raises(SkillInvalid, match=message):
        parse_skill(text, where="x")


def test_scan_keeps_the_valid_and_reports_the_rest(tmp_path: Path) -> None:
    write(tmp_path, "brew-tea", skill("brew-tea", "Brew  green\n  tea."))
    write(tmp_path, "plain", "# No front matter here\n")
    write(tmp_path, "broken", "---\nname: broken\ndescription: [oops\n---\n")
    write(tmp_path, "renamed", skill("other-name"))
    write(tmp_path, "Upper", skill("Upper"))
    write(tmp_path, "binary", b"---\nname: binary\ndescription: \xff\n---\n")
    (tmp_path / "skills" / "empty-folder").mkdir()
    (tmp_path / "skills" / ".hidden").mkdir()
    scan = scan_skills(tmp_path)
    assert [(f.name, f.description, f.path) for f in scan.files] == [
        ("brew-tea", "Brew green tea.", "skills/brew-tea/SKILL.md")
    ]
    assert scan.files[0].body_hash.startswith("sha256:")
    problems = "\n".join(scan.problems)
    assert len(scan.problems) == 6
    assert all(isinstance(error, SkillInvalid) and error.file for error in scan.errors)
    assert "skills/plain/SKILL.md: no front matter" in problems
    assert "skills/broken/SKILL.md:4: invalid YAML" in problems  # where the front matter ends unclosed
    assert "skills/renamed/SKILL.md:2: name 'other-name' differs from its folder 'renamed'" in problems
    assert "skills/Upper/SKILL.md:2: name 'Upper' must be lowercase" in problems
    assert "skills/binary/SKILL.md:3: not UTF-8 text (byte 0xff at offset 30)" in problems
    assert "skills/empty-folder: no SKILL.md; skipped" in problems
    assert scan_skills(tmp_path / "missing").files == ()


async def test_the_watcher_syncs_adds_edits_and_removals(
    tmp_path: Path, store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    changes: list[str] = []
    watcher = SkillsWatcher(tmp_path, store, on_change=lambda: changes.append("changed"))
    first = await watcher.poll()
    assert first is not None
    assert not first.changed  # no skills folder yet: the first poll still syncs
    assert await watcher.poll() is None

    write(tmp_path, "brew-tea", skill("brew-tea"))
    write(tmp_path, "haiku", skill("haiku", "Writes haiku."))
    added = await watcher.poll()
    assert added is not None
    assert added.report.added == ["brew-tea", "haiku"]
    assert await watcher.poll() is None

    path = write(tmp_path, "haiku", skill("haiku", "Writes haiku in 5-7-5."))
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse filesystems
    edited = await watcher.poll()
    assert edited is not None
    assert edited.report.updated == ["haiku"]
    assert (await store.skills.get("haiku")).description == "Writes haiku in 5-7-5."  # type: ignore[union-attr]

    write(tmp_path, "nofront", "just text")
    skipped = await watcher.poll()
    assert skipped is not None
    assert not skipped.changed
    assert "skills/nofront/SKILL.md: no front matter" in caplog.text

    (tmp_path / "skills" / "brew-tea" / "SKILL.md").unlink()
    removed = await watcher.poll()
    assert removed is not None
    assert removed.report.removed == ["brew-tea"]
    assert [s.name for s in await store.skills.all()] == ["haiku"]
    assert changes == ["changed", "changed", "changed"]
    assert await watcher.poll(force=True) is not None


def test_enabled_names() -> None:
    assert enabled_names({}) == "*"
    assert enabled_names({"enabled": "*"}) == "*"
    assert enabled_names({"enabled": ["tea", "haiku"]}) == frozenset({"tea", "haiku"})
    with pytest.raises(ValueError, match="'\\*' or a list"):
        enabled_names({"enabled": "tea"})
    with pytest.raises(ValueError, match="'\\*' or a list"):
        enabled_names({"enabled": [1]})


async def test_the_prompt_section(tmp_path: Path, store: MemoryStore) -> None:
    write(tmp_path, "brew-tea", skill("brew-tea", "Brew tea."))
    write(tmp_path, "haiku", skill("haiku", "Write haiku."))
    await SkillsWatcher(tmp_path, store).poll()
    everything = await profile_skills(store, "*")
    assert skills_section(everything, "trusted") == f"{SKILLS_HEADER}\n- brew-tea: Brew tea.\n- haiku: Write haiku."
    assert skills_section(everything, "untrusted") is None
    assert skills_section([], "owner") is None
    assert [s.name for s in await profile_skills(store, {"haiku", "missing"})] == ["haiku"]
    await store.skills.set_enabled("haiku", False)
    assert [s.name for s in await profile_skills(store, "*")] == ["brew-tea"]


async def test_the_skill_scheme(tmp_path: Path, store: MemoryStore) -> None:
    write(tmp_path, "brew-tea", skill("brew-tea", "Brew tea.", "# Brewing\nWater at 80°C.\n"))
    write(tmp_path, "haiku", skill("haiku", "Write haiku."))
    await SkillsWatcher(tmp_path, store).poll()
    center = ResourceCenter()
    scheme = SkillScheme(tmp_path, store, enabled={"brew-tea"})
    center.register("skill", scheme, owner="ishiki.ext.skills", trust=SKILL_TRUST)

    read = await center.read("skill://brew-tea")
    assert read.text == "# Brewing\nWater at 80°C."
    assert read.media_type == "text/markdown"
    meta = await center.read("skill://brew-tea?view=meta")
    assert '"description": "Brew tea."' in (meta.text or "")
    listing = await center.read("skill://")
    assert listing.text == "skill://brew-tea - Brew tea."
    with pytest.raises(ResourceError, match="no skill 'haiku'; skills available: brew-tea"):
        await center.read("skill://haiku")  # not enabled for this profile
    with pytest.raises(ResourceError, match="without a path"):
        await center.read("skill://brew-tea/other")

    write(tmp_path, "brew-tea", skill("brew-tea", "Brew tea.", "Edited.\n"))
    assert (await center.read("skill://brew-tea")).text == "Edited."  # bodies are read at each read

    with pytest.raises(ResourceError, match="skill:// needs trust trusted; this conversation is untrusted"):
        await center.read("skill://brew-tea", trust="untrusted")
    with pytest.raises(ResourceError, match="not available in this conversation") as refused:
        await scheme.read(ResourceRequest(parse_resource_url("skill://brew-tea"), trust="untrusted"))
    assert refused.value.code == "forbidden"
    assert (await center.read("skill://brew-tea", trust="trusted")).text == "Edited."

    (tmp_path / "skills" / "brew-tea" / "SKILL.md").write_text("gone wrong", encoding="utf-8")
    with pytest.raises(ResourceError, match="cannot be read now"):
        await center.read("skill://brew-tea")
