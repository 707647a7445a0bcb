"""Every way out of a mount is refused: path tricks, symlinks (to outside, loops, swapped), hard links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ishiki_ext_workspace._confine import resolve

from ishiki_host.errors import ResourceError

pytestmark = pytest.mark.anyio

SECRET = "TOP SECRET"

PATH_TRICKS = [
    ("../outside/secret.txt", "'..' is not allowed"),
    ("notes/../../outside/secret.txt", "'..' is not allowed"),
    ("notes/..", "'..' is not allowed"),
    ("/etc/passwd", "absolute paths are not allowed"),
    ("//etc/passwd", "absolute paths are not allowed"),
    ("notes\x00.txt", "NUL and control characters"),
    ("notes\n.txt", "NUL and control characters"),
    ("..\\outside\\secret.txt", "'\\' is not allowed"),
    ("~/secret.txt", "'~' is not expanded"),
    ("workspace://root/%2e%2e/outside/secret.txt", "'..' segment is not allowed"),
    ("workspace://root/notes/%2E%2E/%2e%2e/secret.txt", "'..' segment is not allowed"),
    ("workspace://root/..%2Fsecret.txt", "encoded '/'"),
    ("workspace://root//etc/passwd", "empty segment"),
    ("workspace://root/a%00b", "NUL and control characters"),
    ("workspace://root/a.txt?view=meta", "no ?query"),
]


@pytest.mark.parametrize(("path", "why"), PATH_TRICKS)
async def test_path_tricks_are_refused_by_every_tool(open_workspace, path: str, why: str) -> None:
    async with open_workspace() as ws:
        (ws.root / "notes").mkdir()
        for tool, extra in [
            ("read_file", {}),
            ("write_file", {"content": "x"}),
            ("edit_file", {"old": "a", "new": "b"}),
            ("delete_file", {}),
            ("list_files", {}),
            ("search_files", {"pattern": "SECRET"}),
        ]:
            result = await ws.refused(tool, path=path, **extra)
            assert why in result.content, (tool, result.content)
            assert result.data["error"] == "invalid_resource_uri"
            assert SECRET not in result.content


DEEP = "/".join(["a"] * 1998) + "/x.txt"  # 1,999 levels in one path


@pytest.mark.parametrize("path", [DEEP, f"workspace://root/{DEEP}"])
async def test_a_path_deeper_than_listing_goes_is_refused_by_every_tool(open_workspace, path: str) -> None:
    async with open_workspace() as ws:
        for tool, extra in [
            ("write_file", {"content": "x"}),
            ("read_file", {}),
            ("edit_file", {"old": "a", "new": "b"}),
            ("delete_file", {}),
            ("list_files", {}),
            ("search_files", {"pattern": "x"}),
        ]:
            result = await ws.refused(tool, path=path, **extra)
            assert result.data["error"] == "invalid_resource_uri", (tool, result.content)
            assert "1999 levels deep; a path has at most 64 (as deep as listing goes)" in result.content
        assert list(ws.root.iterdir()) == []  # nothing was made on the way


async def test_a_path_as_deep_as_listing_goes_is_written_and_listed(open_workspace) -> None:
    deepest = "/".join(["d"] * 63) + "/x.txt"  # 64 levels
    async with open_workspace() as ws:
        await ws.ok("write_file", path=deepest, content="bottom")
        assert (await ws.ok("read_file", path=deepest)).content.rstrip().endswith("bottom")
        listing = await ws.ok("list_files", path="", depth=64)
        assert "x.txt" in listing.content


async def test_percent_escapes_in_a_plain_path_are_a_literal_name(open_workspace) -> None:
    async with open_workspace() as ws:
        await ws.ok("write_file", path="%2e%2e/x.txt", content="inside")
        assert (ws.root / "%2e%2e" / "x.txt").read_text() == "inside"


async def test_a_symlink_to_an_outside_file_is_refused(open_workspace, outside: Path) -> None:
    async with open_workspace() as ws:
        (ws.root / "leak.txt").symlink_to(outside / "secret.txt")
        for tool, extra in [("read_file", {}), ("edit_file", {"old": "TOP", "new": "x"})]:
            result = await ws.refused(tool, path="leak.txt", **extra)
            assert "leads outside the mount" in result.content
        result = await ws.refused("write_file", path="leak.txt", content="overwritten")
        assert "leads outside the mount" in result.content
        with pytest.raises(ResourceError, match="leads outside"):
            await ws.rt.resources.read("workspace://root/leak.txt")
        assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def test_a_symlinked_directory_to_outside_is_refused_on_the_way(open_workspace, outside: Path) -> None:
    async with open_workspace() as ws:
        (ws.root / "out").symlink_to(outside, target_is_directory=True)
        assert "leads outside" in (await ws.refused("read_file", path="out/secret.txt")).content
        assert "leads outside" in (await ws.refused("list_files", path="out")).content
        assert "leads outside" in (await ws.refused("write_file", path="out/new/planted.txt", content="x")).content
        assert "leads outside" in (await ws.refused("search_files", pattern="SECRET", path="out")).content
        assert os.listdir(outside) == ["secret.txt"]


async def test_a_relative_link_climbing_out_is_refused_even_when_it_comes_back(open_workspace, home: Path) -> None:
    async with open_workspace() as ws:
        (ws.root / "f.txt").write_text("inside")
        # ../workspace/f.txt names the same file, but the walk leaves the mount on the way.
        (ws.root / "sneaky").symlink_to(Path("..") / ws.root.name / "f.txt")
        assert "leads outside" in (await ws.refused("read_file", path="sneaky")).content


async def test_links_that_stay_inside_are_followed(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "docs" / "deep").mkdir(parents=True)
        (ws.root / "docs" / "deep" / "a.txt").write_text("alpha\n")
        (ws.root / "rel").symlink_to(Path("docs") / "deep" / ".." / "deep" / "a.txt")
        (ws.root / "abs").symlink_to(ws.root / "docs" / "deep" / "a.txt")
        (ws.root / "dirlink").symlink_to("docs", target_is_directory=True)
        (ws.root / "chain").symlink_to("rel")
        for path in ("rel", "abs", "dirlink/deep/a.txt", "chain"):
            assert "alpha" in (await ws.ok("read_file", path=path)).content, path
        await ws.ok("write_file", path="chain", content="beta\n")
        assert (ws.root / "docs" / "deep" / "a.txt").read_text() == "beta\n"
        assert (ws.root / "chain").is_symlink()


async def test_symlink_loops_are_refused(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "a").symlink_to("b")
        (ws.root / "b").symlink_to("a")
        (ws.root / "self").symlink_to("self")
        (ws.root / "spin").symlink_to(".", target_is_directory=True)
        for path in ("a", "self"):
            assert "symlink loop" in (await ws.refused("read_file", path=path)).content
        # A link to its own directory is no escape: spin/spin/... stays in the root.
        (ws.root / "x.txt").write_text("x")
        assert "x" in (await ws.ok("read_file", path="spin/spin/spin/x.txt")).content
        listing = await ws.ok("list_files", depth=5)
        assert "spin@" in listing.content


async def test_a_hard_link_to_an_outside_file_is_never_read(open_workspace, outside: Path) -> None:
    async with open_workspace() as ws:
        os.link(outside / "secret.txt", ws.root / "linked.txt")
        result = await ws.refused("read_file", path="linked.txt")
        assert "2 hard links" in result.content
        assert SECRET not in result.content
        assert "hard links" in (await ws.refused("edit_file", path="linked.txt", old="TOP", new="NO")).content
        search = await ws.ok("search_files", pattern="SECRET")
        assert SECRET not in search.content
        assert "1 hard-linked" in search.content
        with pytest.raises(ResourceError, match="hard links"):
            await ws.rt.resources.read("workspace://root/linked.txt")
        meta = await ws.rt.resources.read("workspace://root/linked.txt?view=meta")
        assert meta.meta["hardLinks"] == 2
        # Writing replaces the name only; the outside file keeps its content.
        await ws.ok("write_file", path="linked.txt", content="mine")
        assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
        assert (ws.root / "linked.txt").read_text() == "mine"


async def test_deleting_a_link_removes_the_link_not_its_target(open_workspace, outside: Path) -> None:
    async with open_workspace() as ws:
        (ws.root / "leak.txt").symlink_to(outside / "secret.txt")
        os.link(outside / "secret.txt", ws.root / "hard.txt")
        assert "deleted symlink leak.txt" in (await ws.ok("delete_file", path="leak.txt")).content
        assert "deleted file hard.txt" in (await ws.ok("delete_file", path="hard.txt")).content
        assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
        assert list(ws.root.iterdir()) == []


async def test_a_symlinked_mount_root_serves_the_directory_it_named_at_start(
    open_workspace, tmp_path: Path, outside: Path
) -> None:
    real = tmp_path / "real" / "docs"
    real.mkdir(parents=True)
    (real / "guide.md").write_text("# Guide\n")
    (tmp_path / "real" / "sibling.txt").write_text("next door")
    link = tmp_path / "docs-link"
    link.symlink_to(real, target_is_directory=True)
    (real / "up").symlink_to("..", target_is_directory=True)
    (real / "via-link").symlink_to(link / "guide.md")
    config = {"mounts": [{"name": "docs", "path": str(link)}]}
    async with open_workspace(config) as ws:
        assert "# Guide" in (await ws.ok("read_file", path="workspace://docs/guide.md")).content
        assert "# Guide" in (await ws.ok("read_file", path="workspace://docs/via-link")).content
        assert "leads outside" in (await ws.refused("read_file", path="workspace://docs/up/sibling.txt")).content
        # Re-pointing the link later does not move the mount.
        link.unlink()
        link.symlink_to(outside, target_is_directory=True)
        assert "does not exist" in (await ws.refused("read_file", path="workspace://docs/secret.txt")).content
        assert "# Guide" in (await ws.ok("read_file", path="workspace://docs/guide.md")).content


async def test_a_mount_root_replaced_by_a_symlink_is_not_followed(
    open_workspace, tmp_path: Path, outside: Path
) -> None:
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    async with open_workspace({"mounts": [{"name": "m", "path": str(mounted)}]}) as ws:
        mounted.rmdir()
        mounted.symlink_to(outside, target_is_directory=True)
        result = await ws.refused("read_file", path="workspace://m/secret.txt")
        assert SECRET not in result.content
        assert "cannot be opened" in result.content


def test_the_walk_never_looks_up_a_full_path_twice(tmp_path: Path, outside: Path) -> None:
    """A directory swapped for a symlink after the walk entered it changes nothing: the walk holds descriptors."""
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.txt").write_text("inside")
    with resolve(str(root), ("a", "f.txt"), "a/f.txt") as target:
        os.rename(root / "a", tmp_path / "moved")
        (root / "a").symlink_to(outside, target_is_directory=True)
        assert os.stat(target.name, dir_fd=target.dir_fd).st_size == len("inside")
        assert target.real == ("a", "f.txt")
