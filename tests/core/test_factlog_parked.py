"""A parked fact log (an idle runtime's, ``FactLog.park``): its file closed and its lock released, opened again
by the next append or read, with nothing lost and what another writer added meanwhile read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ishiki_host.core.factlog import FactLog
from ishiki_host.errors import FactLogError, FactLogLocked

pytestmark = pytest.mark.anyio

HELLO = {"role": "user", "parts": [{"type": "text", "text": "hello"}]}


def holds(path: Path) -> bool:
    """Whether this process has ``path`` open."""
    target = str(path.resolve())
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == target:
                return True
        except OSError:
            continue
    return False


def newest_first(log: FactLog) -> list[int]:
    return [entry.id for entry in log.iter_reverse()]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
async def test_a_parked_log_holds_no_file_and_the_next_append_opens_it_again(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    async with await FactLog.open(path) as log:
        await log.append("message", HELLO)
        await log.append("message", HELLO, turn=1, sync=False)  # pending: parking makes it durable first
        assert await log.park()
        assert log.parked
        assert not holds(path)
        assert log.durable_id == 2
        assert not await log.park()  # parked already
        entry = await log.append("message", HELLO)
        assert entry.id == 3
        assert not log.parked
        assert holds(path)
        assert await log.read_back(lambda entries: [e.id for e in entries]) == [3, 2, 1]
    async with await FactLog.open(path) as again:
        assert newest_first(again) == [3, 2, 1]


async def test_a_read_opens_a_parked_log_again_and_sees_what_another_writer_added(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    async with await FactLog.open(path) as log:
        await log.append("message", HELLO)
        assert await log.park()
        async with await FactLog.open(path) as other:  # the lock was released: another writer may open it
            await other.append("message", HELLO)
        generation = log.generation
        assert await log.read_back(lambda entries: [e.id for e in entries]) == [2, 1]
        assert log.generation == generation + 1  # readers keeping a copy read again
        assert (await log.append("message", HELLO)).id == 3  # the ids go on after the other writer's


async def test_a_parked_log_whose_file_another_writer_holds_is_refused_until_it_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    async with await FactLog.open(path) as log:
        await log.append("message", HELLO)
        assert await log.park()
        other = await FactLog.open(path)
        with pytest.raises(FactLogLocked, match="already open by another writer"):
            await log.append("message", HELLO)
        assert log.parked
        await other.close()
        assert (await log.append("message", HELLO)).id == 2


async def test_a_parked_log_whose_file_was_removed_or_replaced_is_refused_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    async with await FactLog.open(path) as log:
        await log.append("message", HELLO)
        assert await log.park()
        path.rename(tmp_path / "moved.jsonl")
        with pytest.raises(FactLogError, match=r"cannot open fact log .*facts\.jsonl again"):
            await log.append("message", HELLO)
        path.write_bytes(b"")  # another file under its name
        for _ in range(2):  # refused every time, not only the first
            with pytest.raises(FactLogError, match="was replaced or removed"):
                await log.read_back(lambda entries: [e.id for e in entries])
        assert log.parked


async def test_closing_a_parked_log_is_clean_and_a_closed_log_does_not_park(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    log = await FactLog.open(path)
    await log.append("message", HELLO)
    assert await log.park()
    await log.close()
    await log.close()  # idempotent
    assert log.closed
    assert not log.parked
    assert not await log.park()
    with pytest.raises(FactLogError, match="is closed"):
        await log.append("message", HELLO)
    async with await FactLog.open(path) as again:  # nothing left locked
        assert newest_first(again) == [1]
