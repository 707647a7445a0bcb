"""Concurrent writes to one file: one whole version wins, readers never see half a file, edits never get lost."""

from __future__ import annotations

import errno
import os

import anyio
import pytest
from ishiki_ext_workspace._locks import file_locks

pytestmark = pytest.mark.anyio

WRITERS = 16
SIZE = 256 * 1024


def _version(i: int) -> str:
    return f"{i:02d}" * (SIZE // 2)


async def test_concurrent_writes_leave_one_whole_version_and_readers_never_see_a_torn_file(open_workspace) -> None:
    versions = {_version(i) for i in range(WRITERS)} | {"initial"}
    async with open_workspace({"max_file_bytes": 2 * SIZE}) as ws:
        target = ws.root / "shared.txt"
        target.write_text("initial")
        seen: list[str] = []
        writing = anyio.Event()

        async def writer(i: int) -> None:
            await ws.ok("write_file", path="shared.txt", content=_version(i))

        async def reader() -> None:
            while not writing.is_set():
                seen.append(await anyio.to_thread.run_sync(target.read_text))

        async with anyio.create_task_group() as readers:
            readers.start_soon(reader)
            async with anyio.create_task_group() as writers:
                for i in range(WRITERS):
                    writers.start_soon(writer, i)
            writing.set()
        assert seen
        assert set(seen) <= versions, "a reader saw a file that no writer wrote whole"
        assert target.read_text() in versions - {"initial"}
        assert sorted(p.name for p in ws.root.iterdir()) == ["shared.txt"]
    assert len(file_locks) == 0


async def test_concurrent_edits_of_one_file_all_apply_even_through_a_symlink(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "tasks.txt").write_text("".join(f"[todo {i}]\n" for i in range(WRITERS)))
        (ws.root / "alias.txt").symlink_to("tasks.txt")

        async def edit(i: int) -> None:
            path = "alias.txt" if i % 2 else "tasks.txt"
            await ws.ok("edit_file", path=path, old=f"[todo {i}]", new=f"[done {i}]")

        async with anyio.create_task_group() as tg:
            for i in range(WRITERS):
                tg.start_soon(edit, i)
        assert (ws.root / "tasks.txt").read_text() == "".join(f"[done {i}]\n" for i in range(WRITERS))
        assert (ws.root / "alias.txt").is_symlink()


async def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    open_workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_workspace() as ws:
        (ws.root / "keep.txt").write_text("old")

        def failing_fsync(fd: int) -> None:  # the disk fails (an OS edge)
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(os, "fsync", failing_fsync)
        result = await ws.refused("write_file", path="keep.txt", content="new")
        monkeypatch.undo()
        assert "keep.txt: Input/output error" in result.content
        assert result.data["error"] == "io_error"
        assert (ws.root / "keep.txt").read_text() == "old"
        assert sorted(p.name for p in ws.root.iterdir()) == ["keep.txt"]
