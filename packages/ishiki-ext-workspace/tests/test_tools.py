"""Each file tool, through its real handler on a workspace attached to a runtime harness."""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


async def test_the_tools_and_their_trust(open_workspace) -> None:
    async with open_workspace() as ws:
        tools = {t.name: t for t in ws.ws.ishiki_tools()}
        assert list(tools) == ["list_files", "read_file", "write_file", "edit_file", "search_files", "delete_file"]
        assert {t.trust for t in tools.values()} == {"trusted"}
        assert tools["edit_file"].parameters["required"] == ["path", "old", "new"]
        assert all(t.parameters["additionalProperties"] is False for t in tools.values())


# --- list_files --------------------------------------------------------------------------------------


async def test_list_files_one_level_by_default_then_deeper(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "src" / "pkg").mkdir(parents=True)
        (ws.root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
        (ws.root / "README.md").write_text("# hi\n")
        top = await ws.ok("list_files")
        assert top.content.splitlines() == [". (the workspace root): 2 entries", "README.md  5 bytes", "src/"]
        assert top.data["entries"][0] == {"path": "README.md", "kind": "file", "size": 5}
        deep = await ws.ok("list_files", path="src", depth=2)
        assert [e["path"] for e in deep.data["entries"]] == ["src/pkg", "src/pkg/mod.py"]


async def test_list_files_glob_is_recursive_and_matches_names_or_paths(open_workspace) -> None:
    async with open_workspace() as ws:
        for rel in ("a.py", "docs/b.md", "docs/deep/c.py", "docs/deep/d.txt", ".git/x.py"):
            (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws.root / rel).write_text("x")
        by_name = await ws.ok("list_files", glob="*.py")
        assert [e["path"] for e in by_name.data["entries"]] == ["a.py", "docs/deep/c.py"]
        by_path = await ws.ok("list_files", glob="docs/**/*.{md,txt}")
        assert [e["path"] for e in by_path.data["entries"]] == ["docs/b.md", "docs/deep/d.txt"]
        shallow = await ws.ok("list_files", glob="*.py", depth=1)
        assert [e["path"] for e in shallow.data["entries"]] == ["a.py"]


async def test_list_files_caps_its_entries(open_workspace) -> None:
    async with open_workspace({"max_results": 3}) as ws:
        for i in range(5):
            (ws.root / f"f{i}.txt").write_text("x")
        result = await ws.ok("list_files")
        assert result.data["truncated"] is True
        assert len(result.data["entries"]) == 3
        assert "more not shown (max_results=3)" in result.content


async def test_list_files_of_every_mount_and_of_a_file(open_workspace, outside: Path) -> None:
    async with open_workspace({"mounts": [{"name": "docs", "path": str(outside)}]}) as ws:
        mounts = await ws.ok("list_files", path="workspace://")
        assert mounts.content.splitlines() == ["root/ (read-write)", "docs/ (read-only)"]
        one = await ws.ok("list_files", path="workspace://docs/secret.txt")
        assert one.data["entries"] == [{"path": "workspace://docs/secret.txt", "kind": "file", "size": 11}]
        assert "does not exist" in (await ws.refused("list_files", path="nowhere")).content


# --- read_file ---------------------------------------------------------------------------------------


async def test_read_file_pages_and_selects_lines(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "log.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
        whole = await ws.ok("read_file", path="log.txt")
        assert whole.data["totalLines"] == 100
        part = await ws.ok("read_file", path="log.txt", lines="10-12")
        assert part.data["text"] == "line 10\nline 11\nline 12"
        assert "lines 10-12 of 100" in part.content
        assert "out_of_range" in (await ws.refused("read_file", path="log.txt", lines="500")).content


async def test_binary_files_are_described_with_size_and_type(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "pic.png").write_bytes(PNG)
        (ws.root / "blob").write_bytes(b"\x00\x01\x02" * 10)
        pic = await ws.ok("read_file", path="pic.png")
        assert pic.data["binary"] is True
        assert pic.data["mediaType"] == "image/png"
        assert pic.data["size"] == len(PNG)
        assert "binary: content not shown" in pic.content
        blob = await ws.ok("read_file", path="blob")
        assert (blob.data["binary"], blob.data["size"]) == (True, 30)
        assert blob.data["mediaType"] == "application/octet-stream"


async def test_a_one_gigabyte_file_is_refused_without_being_read(open_workspace) -> None:
    async with open_workspace() as ws:
        big = ws.root / "huge.bin"
        with big.open("wb") as handle:  # sparse: no gigabyte is written
            handle.truncate(1024**3)
        result = await ws.refused("read_file", path="huge.bin")
        assert "1,073,741,824 bytes (application/octet-stream)" in result.content
        assert "max_file_bytes" in result.content
        assert result.data["error"] == "too_large"
        assert "too_large" in (await ws.refused("edit_file", path="huge.bin", old="a", new="b")).content
        search = await ws.ok("search_files", pattern="x")
        assert search.data["skipped"] == {"too large": 1}
        meta = await ws.rt.resources.read("workspace://root/huge.bin?view=meta")
        assert meta.size == 1024**3


async def test_max_file_bytes_bounds_reading(open_workspace) -> None:
    async with open_workspace({"max_file_bytes": 10}) as ws:
        (ws.root / "ten.txt").write_text("0123456789")
        (ws.root / "eleven.txt").write_text("0123456789A")
        await ws.ok("read_file", path="ten.txt")
        assert "11 bytes (text/plain)" in (await ws.refused("read_file", path="eleven.txt")).content


async def test_read_file_of_a_directory_or_a_missing_file(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "d").mkdir()
        assert "does not exist" in (await ws.refused("read_file", path="missing.txt")).content
        assert "does not exist" in (await ws.refused("read_file", path="no/such/dir/f.txt")).content
        listing = await ws.ok("read_file", path="d")
        assert listing.data["mediaType"] == "inode/directory"


async def test_a_fifo_is_never_opened(open_workspace) -> None:
    async with open_workspace() as ws:
        os.mkfifo(ws.root / "pipe")
        assert "not a regular file" in (await ws.refused("read_file", path="pipe")).content
        assert (await ws.ok("search_files", pattern="x")).data["skipped"] == {"special": 1}
        assert "pipe|" in (await ws.ok("list_files")).content


# --- write_file --------------------------------------------------------------------------------------


async def test_write_file_creates_directories_and_replaces_keeping_the_mode(open_workspace) -> None:
    async with open_workspace() as ws:
        created = await ws.ok("write_file", path="a/b/c.txt", content="héllo\n")
        assert created.content == "wrote a/b/c.txt: 7 bytes (new file)"
        assert (ws.root / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "héllo\n"
        os.chmod(ws.root / "a" / "b" / "c.txt", 0o640)
        replaced = await ws.ok("write_file", path="a/b/c.txt", content="bye\n")
        assert replaced.content == "wrote a/b/c.txt: 4 bytes (replaced 7 bytes)"
        assert stat.S_IMODE((ws.root / "a" / "b" / "c.txt").stat().st_mode) == 0o640
        assert sorted(p.name for p in (ws.root / "a" / "b").iterdir()) == ["c.txt"]  # no temporary file left


async def test_write_file_refusals(open_workspace) -> None:
    async with open_workspace({"max_file_bytes": 100}) as ws:
        (ws.root / "dir").mkdir()
        (ws.root / "file.txt").write_text("x")
        assert "is a directory" in (await ws.refused("write_file", path="dir", content="x")).content
        assert "is a directory" in (await ws.refused("write_file", path=".", content="x")).content
        assert "not a directory" in (await ws.refused("write_file", path="file.txt/inner", content="x")).content
        too_big = await ws.refused("write_file", path="big.txt", content="x" * 101)
        assert "101 bytes" in too_big.content
        assert not (ws.root / "big.txt").exists()


# --- edit_file ---------------------------------------------------------------------------------------


async def test_edit_file_replaces_a_unique_match(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "code.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
        result = await ws.ok("edit_file", path="code.py", old="return 2", new="return 3")
        assert result.content == "edited code.py: 1 replacement (line 5)"
        assert (ws.root / "code.py").read_text().endswith("return 3\n")


async def test_edit_file_refuses_missing_and_ambiguous_matches_and_says_where(open_workspace) -> None:
    async with open_workspace() as ws:
        original = "x = 1\ny = 1\nz = 1\n"
        (ws.root / "v.py").write_text(original)
        missing = await ws.refused("edit_file", path="v.py", old="w = 1", new="w = 2")
        assert "old text not found in v.py" in missing.content
        ambiguous = await ws.refused("edit_file", path="v.py", old="= 1", new="= 2")
        assert "occurs 3 times in v.py (lines 1, 2, 3)" in ambiguous.content
        assert "count=3" in ambiguous.content
        wrong_count = await ws.refused("edit_file", path="v.py", old="= 1", new="= 2", count=2)
        assert "count=2, but old text occurs 3 times" in wrong_count.content
        assert "old and new are the same" in (await ws.refused("edit_file", path="v.py", old="x", new="x")).content
        assert (ws.root / "v.py").read_text() == original
        done = await ws.ok("edit_file", path="v.py", old="= 1", new="= 2", count=3)
        assert done.content == "edited v.py: 3 replacements (lines 1, 2, 3)"
        assert (ws.root / "v.py").read_text() == "x = 2\ny = 2\nz = 2\n"


async def test_edit_file_reports_lines_in_the_new_text(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "t.txt").write_text("a\nMARK\nb\nMARK\n")
        result = await ws.ok("edit_file", path="t.txt", old="MARK", new="one\ntwo", count=2)
        assert result.content.endswith("(lines 2, 5)")
        assert (ws.root / "t.txt").read_text().splitlines()[4] == "one"


async def test_edit_file_keeps_crlf_and_the_bom(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "win.txt").write_bytes(codecs.BOM_UTF8 + b"first\r\nsecond\r\nthird\r\n")
        await ws.ok("edit_file", path="win.txt", old="first\nsecond", new="1st\n2nd")
        assert (ws.root / "win.txt").read_bytes() == codecs.BOM_UTF8 + b"1st\r\n2nd\r\nthird\r\n"


async def test_edit_file_refuses_binary_files(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "pic.png").write_bytes(PNG)
        result = await ws.refused("edit_file", path="pic.png", old="PNG", new="GIF")
        assert "is binary (image/png, 1,032 bytes)" in result.content
        assert (ws.root / "pic.png").read_bytes() == PNG


# --- search_files ------------------------------------------------------------------------------------


async def test_search_files_finds_lines_by_regex(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "src").mkdir()
        (ws.root / "src" / "a.py").write_text("import os\n\ndef main():\n    os.getcwd()\n")
        (ws.root / "src" / "b.md").write_text("# OS notes\nuse os.path\n")
        (ws.root / "pic.png").write_bytes(PNG)
        result = await ws.ok("search_files", pattern=r"\bos\.\w+")
        assert [(m["path"], m["line"]) for m in result.data["matches"]] == [("src/a.py", 4), ("src/b.md", 2)]
        assert "src/a.py:4:     os.getcwd()" in result.content
        assert result.data["skipped"] == {"binary": 1}
        only_py = await ws.ok("search_files", pattern="(?i)^import", glob="*.py")
        assert [m["path"] for m in only_py.data["matches"]] == ["src/a.py"]
        one_file = await ws.ok("search_files", pattern="notes", path="src/b.md")
        assert one_file.data["matches"] == [{"path": "src/b.md", "line": 1, "text": "# OS notes"}]


async def test_search_files_caps_results_and_clips_long_lines(open_workspace) -> None:
    async with open_workspace({"max_results": 5}) as ws:
        (ws.root / "many.txt").write_text("hit\n" * 50)
        (ws.root / "wide.txt").write_text("a" * 5000 + "NEEDLE" + "b" * 5000 + "\n")
        capped = await ws.ok("search_files", pattern="hit")
        assert len(capped.data["matches"]) == 5
        assert capped.data["truncated"] is True
        assert "more matches not shown (max_results=5)" in capped.content
        wide = await ws.ok("search_files", pattern="NEEDLE")
        line = wide.data["matches"][0]["text"]
        assert "NEEDLE" in line
        assert len(line) <= 302


async def test_a_catastrophic_pattern_is_stopped_at_the_deadline(open_workspace) -> None:
    async with open_workspace({"timeout_ms": 500}) as ws:
        (ws.root / "a.txt").write_text("first match\n")
        (ws.root / "b.txt").write_text("a" * 40 + "!\n")
        result = await ws.ok("search_files", pattern=r"^(first match|(a|aa)+$)")
        assert result.data["timedOut"] is True
        assert "stopped at the time limit while searching b.txt" in result.content
        assert [m["path"] for m in result.data["matches"]] == ["a.txt"]


async def test_search_files_refuses_an_invalid_pattern(open_workspace) -> None:
    async with open_workspace() as ws:
        result = await ws.refused("search_files", pattern="(unclosed")
        assert "is not a valid regular expression" in result.content


# --- delete_file -------------------------------------------------------------------------------------


async def test_delete_file_deletes_files_and_empty_directories_only(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "full").mkdir()
        (ws.root / "full" / "x.txt").write_text("x")
        (ws.root / "empty").mkdir()
        assert (await ws.ok("delete_file", path="full/x.txt")).content == "deleted file full/x.txt"
        assert (await ws.ok("delete_file", path="empty")).content == "deleted directory empty"
        (ws.root / "full" / "y.txt").write_text("y")
        assert "not empty" in (await ws.refused("delete_file", path="full")).content
        assert "mount root" in (await ws.refused("delete_file", path=".")).content
        assert "does not exist" in (await ws.refused("delete_file", path="nothing")).content
        assert (ws.root / "full" / "y.txt").exists()


# --- read-only mounts --------------------------------------------------------------------------------


async def test_read_only_mounts_are_read_but_never_written(open_workspace, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\nstep one\n")
    async with open_workspace({"mounts": [{"name": "docs", "path": str(docs)}]}) as ws:
        assert "step one" in (await ws.ok("read_file", path="workspace://docs/guide.md")).content
        assert (await ws.ok("search_files", pattern="step", path="workspace://docs")).data["matches"] == [
            {"path": "workspace://docs/guide.md", "line": 2, "text": "step one"}
        ]
        for tool, extra in [
            ("write_file", {"content": "x"}),
            ("edit_file", {"old": "one", "new": "two"}),
            ("delete_file", {}),
        ]:
            result = await ws.refused(tool, path="workspace://docs/guide.md", **extra)
            assert "mount 'docs' is read-only" in result.content
            assert result.data["error"] == "read_only"
        assert sorted(p.name for p in docs.iterdir()) == ["guide.md"]
        assert (docs / "guide.md").read_text() == "# Guide\nstep one\n"


async def test_read_write_mounts_are_written(open_workspace, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    async with open_workspace({"mounts": [{"name": "out", "path": str(out), "mode": "rw"}]}) as ws:
        result = await ws.ok("write_file", path="workspace://out/report.txt", content="done\n")
        assert result.content == "wrote workspace://out/report.txt: 5 bytes (new file)"
        assert (out / "report.txt").read_text() == "done\n"


async def test_listing_and_search_output_is_capped(open_workspace) -> None:
    async with open_workspace({"max_output_bytes": 300, "max_results": 1000}) as ws:
        for i in range(50):
            (ws.root / f"file-{i:03d}.txt").write_text("match\n")
        listing = await ws.ok("list_files")
        assert len(listing.content.encode()) < 400
        assert listing.content.endswith("… output cut at 300 bytes (max_output_bytes); narrow the request")
        assert len(listing.data["entries"]) == 50
        search = await ws.ok("search_files", pattern="match")
        assert "output cut at 150 bytes" in search.content
        assert len(search.data["matches"]) == 50
