"""A fact log changed by another hand while it is open: read again from the file, or refused with a clear error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ishiki_host.core.factlog import FactLog
from ishiki_host.engines.context._cache import WindowCache
from ishiki_host.engines.context._window import WindowParams, select_window
from ishiki_host.errors import FactLogError

pytestmark = pytest.mark.anyio


def line(entry_id: int, text: str = "hi") -> bytes:
    data = {"role": "user", "parts": [{"type": "text", "text": text}]}
    return json.dumps({"id": entry_id, "type": "message", "ts": 1.0, "data": data}).encode() + b"\n"


def ids(log: FactLog) -> list[int]:
    return [entry.id for entry in log.iter_reverse()][::-1]


async def fill(log: FactLog, count: int) -> None:
    await log.append_many([("message", {"role": "user", "parts": []}) for _ in range(count)])


async def test_lines_appended_by_hand_are_read_and_the_ids_go_on(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    async with await FactLog.open(path) as log:
        await fill(log, 3)
        generation = log.generation
        with path.open("ab") as out:
            out.write(line(4, "written by hand"))
        assert await log.read_back(lambda entries: [e.id for e in entries]) == [4, 3, 2, 1]
        assert log.generation == generation + 1
        assert any("changed under the running host" in w and str(path) in w for w in log.warnings)
        assert (await log.append("custom", {})).id == 5
        assert ids(log) == [1, 2, 3, 4, 5]


async def test_a_log_cut_short_by_hand_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    async with await FactLog.open(path) as log:
        await fill(log, 5)
        kept = b"".join(path.read_bytes().splitlines(keepends=True)[:2])
        os.truncate(path, len(kept))
        assert ids(log) == [1, 2]
        assert log.last_id == 2
        assert (await log.append("custom", {})).id == 3


async def test_a_torn_line_written_by_hand_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    async with await FactLog.open(path) as log:
        await fill(log, 2)
        with path.open("ab") as out:
            out.write(b'{"id":3,"type":"mess')
        assert log.tail(5)[-1].id == 2
        assert b'{"id":3' in path.with_name("facts.jsonl.corrupt").read_bytes()
        assert (await log.append("custom", {})).id == 3
    assert [json.loads(raw)["id"] for raw in path.read_bytes().splitlines()] == [1, 2, 3]


async def test_a_log_replaced_under_the_host_is_refused_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    async with await FactLog.open(path) as log:
        await fill(log, 2)
        replacement = tmp_path / "edited.jsonl"
        replacement.write_bytes(line(1))
        replacement.replace(path)  # what an editor's save does
        with pytest.raises(FactLogError, match=rf"{path}.* was replaced or removed"):
            await log.read_back(lambda entries: list(entries))


async def test_a_kept_window_is_rebuilt_from_a_file_edited_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"

    def cost(entry: object) -> int:
        return 10

    params = WindowParams(1_000, 0.5, cost)
    async with await FactLog.open(path) as log:
        await fill(log, 5)
        cache = WindowCache()
        await cache.select(log, params)
        kept = b"".join(path.read_bytes().splitlines(keepends=True)[:3])
        os.truncate(path, len(kept))
        with path.open("ab") as out:
            out.write(line(4, "another fourth"))
        window = await cache.select(log, params)
        fresh = await log.read_back(lambda entries: select_window(entries, params))
        assert [e.id for e in window.entries] == [e.id for e in fresh.entries] == [1, 2, 3, 4]
        assert window.entries[-1].data["parts"] == [{"type": "text", "text": "another fourth"}]
        assert cache.rebuilds == 2
