"""The fact log on a failing disk: a refused append leaves no trace, and the log can always be closed and
opened again (the write and fsync syscalls are the OS edges faked here)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.core.factlog import FactLog
from ishiki_host.errors import FactLogError

pytestmark = pytest.mark.anyio


def no_space(*args: Any) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


async def test_a_write_cut_by_enospc_leaves_no_half_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "facts.jsonl"
    log = await FactLog.open(path)
    await log.append("message", {"role": "user", "parts": []})
    real_write = os.write

    def half_then_full(fd: int, data: Any) -> int:
        if len(data) > 8:
            return real_write(fd, bytes(data[: len(data) // 2]))  # the disk takes half, then nothing
        no_space()
        return 0

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(FactLogError, match="No space left on device"):
        await log.append("message", {"role": "assistant", "parts": [{"type": "text", "text": "x" * 100}]})
    monkeypatch.setattr(os, "write", real_write)
    assert path.read_bytes().count(b"\n") == 1
    assert path.read_bytes().endswith(b"\n")
    entry = await log.append("message", {"role": "assistant", "parts": []})
    assert entry.id == 2  # the refused entry took no id
    await log.close()


async def test_a_failing_last_fsync_still_releases_the_log(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    log = await FactLog.open(path, syncer=no_space)
    await log.append("message", {"role": "user", "parts": []}, turn=1)  # inside a turn: synced later
    with pytest.raises(FactLogError, match="cannot fsync"):
        await log.close()
    assert log.closed
    await log.close()  # idempotent
    async with await FactLog.open(path) as again:  # the lock was released
        assert again.last_id == 1


async def test_a_log_that_could_not_remove_a_half_line_refuses_appends_and_still_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "facts.jsonl"
    log = await FactLog.open(path)
    monkeypatch.setattr(os, "write", lambda fd, data: no_space())
    monkeypatch.setattr(os, "ftruncate", lambda fd, size: no_space())
    with pytest.raises(FactLogError):
        await log.append("message", {"role": "user", "parts": []})
    monkeypatch.undo()
    with pytest.raises(FactLogError, match="closed"):
        await log.append("message", {"role": "user", "parts": []})
    await log.close()
    async with await FactLog.open(path):  # before, close() returned early and the lock stayed held
        pass
