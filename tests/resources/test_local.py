"""local://: files under the runtime home, and every way out of it refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ishiki_host.errors import ResourceError
from ishiki_host.resources import ResourceCenter, create_runtime_resources
from ishiki_host.resources.local import _read_checked


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "today.md").write_text("# Today\nwalk\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret")
    return home


@pytest.fixture
def center(home: Path) -> ResourceCenter:
    return create_runtime_resources(home).center


async def _refused(center: ResourceCenter, url: str, match: str | None = None) -> None:
    with pytest.raises(ResourceError, match=match) as caught:
        await center.read(url)
    assert caught.value.code == "invalid_resource_uri", caught.value


@pytest.mark.anyio
async def test_reads_files_and_lists_directories(center: ResourceCenter) -> None:
    result = await center.read("local://notes/today.md")
    assert result.text == "# Today\nwalk"
    assert result.media_type == "text/markdown"
    assert result.meta["kind"] == "file"
    listing = await center.read("local://")
    assert listing.text == "notes/"
    assert listing.media_type == "inode/directory"
    assert (await center.read("local://notes/")).text == "today.md"


@pytest.mark.anyio
async def test_meta_view_uses_stat_only(center: ResourceCenter) -> None:
    result = await center.read("local://notes/today.md?view=meta")
    assert '"size": 13' in (result.text or "")
    assert result.size == 13


@pytest.mark.anyio
@pytest.mark.parametrize(
    "url",
    [
        "local://../outside/secret.txt",
        "local://../../etc/passwd",
        "local://notes/../../outside/secret.txt",
        "local://%2e%2e/outside/secret.txt",
        "local://%2E%2E/%2E%2E/etc/passwd",
        "local://..%2Foutside%2Fsecret.txt",
        "local:///etc/passwd",
        "local:////etc/passwd",
        "local://notes/today.md%00.txt",
        "local://notes/today.md\x00",
        "local://notes\\..\\..\\outside",
    ],
)
async def test_path_escapes_are_refused(center: ResourceCenter, url: str) -> None:
    await _refused(center, url)


@pytest.mark.anyio
async def test_symlinks_that_escape_are_refused(center: ResourceCenter, home: Path, tmp_path: Path) -> None:
    (home / "out").symlink_to(tmp_path / "outside")
    (home / "secret").symlink_to(tmp_path / "outside" / "secret.txt")
    (home / "relative").symlink_to(Path("..") / "outside" / "secret.txt")
    (home / "chain").symlink_to(home / "out")
    (home / "dangling").symlink_to(tmp_path / "outside" / "missing.txt")
    (home / "root").symlink_to("/")
    for url in (
        "local://out",
        "local://out/secret.txt",
        "local://secret",
        "local://relative",
        "local://chain/secret.txt",
        "local://dangling",
        "local://root/etc/passwd",
    ):
        await _refused(center, url, "outside the runtime home")


@pytest.mark.anyio
async def test_symlink_loops_are_refused(center: ResourceCenter, home: Path) -> None:
    (home / "a").symlink_to(home / "b")
    (home / "b").symlink_to(home / "a")
    (home / "self").symlink_to("self")
    await _refused(center, "local://a", "loop")
    await _refused(center, "local://self/x")


@pytest.mark.anyio
async def test_symlinks_inside_the_home_are_followed(center: ResourceCenter, home: Path) -> None:
    (home / "latest").symlink_to(home / "notes" / "today.md")
    (home / "docs").symlink_to("notes")
    assert (await center.read("local://latest")).text == "# Today\nwalk"
    assert (await center.read("local://docs/today.md")).text == "# Today\nwalk"


@pytest.mark.anyio
async def test_special_files_are_refused(center: ResourceCenter, home: Path) -> None:
    os.mkfifo(home / "pipe")
    await _refused(center, "local://pipe", "not a regular file")


@pytest.mark.anyio
async def test_missing_files_and_a_missing_home(tmp_path: Path) -> None:
    center = create_runtime_resources(tmp_path / "never-created").center
    for url in ("local://", "local://nope.txt"):
        with pytest.raises(ResourceError, match="does not exist") as caught:
            await center.read(url)
        assert caught.value.code == "not_found"


@pytest.mark.anyio
async def test_binary_and_large_files(home: Path) -> None:
    resources = create_runtime_resources(home)
    (home / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(2000))
    result = await resources.center.read("local://photo.jpg")
    assert result.binary
    assert result.size == 2004
    assert result.media_type == "image/jpeg"
    small = ResourceCenter(max_bytes=100)
    small.register("local", resources.local)
    with pytest.raises(ResourceError, match="2004 bytes") as caught:
        await small.read("local://photo.jpg")
    assert caught.value.code == "too_large"


def test_a_file_swapped_after_the_check_is_refused(home: Path) -> None:
    target = home / "notes" / "today.md"
    other = os.stat(home / "notes")
    with pytest.raises(ResourceError, match="changed while being read"):
        _read_checked(str(target), other, 1000, "local://notes/today.md")
    link = home / "link"
    link.symlink_to(target)
    with pytest.raises(ResourceError, match="changed into a symlink"):
        _read_checked(str(link), os.stat(target), 1000, "local://link")


@pytest.mark.anyio
async def test_the_hosts_own_state_is_hidden(center: ResourceCenter, home: Path) -> None:
    (home / "facts.jsonl").write_text('{"id": 1}\n')
    (home / "facts.jsonl.1").write_text("")
    (home / "facts.lock").write_text("")
    (home / "notes" / ".tmp-abc").write_text("partial")
    (home / "alias").symlink_to(home / "facts.jsonl")
    assert (await center.read("local://")).text == "alias\nnotes/"
    assert (await center.read("local://notes")).text == "today.md"
    for url in ("local://facts.jsonl", "local://facts.jsonl.1", "local://facts.lock", "local://alias"):
        with pytest.raises(ResourceError, match="does not exist") as caught:
            await center.read(url)
        assert caught.value.code == "not_found"
