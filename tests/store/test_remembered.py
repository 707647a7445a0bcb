"""``Remembered``: answers kept until a write, and one read in flight per key for callers that miss at once."""

from __future__ import annotations

import anyio
import pytest

from ishiki_host.errors import StoreError
from ishiki_host.store.repos.remembered import Remembered

pytestmark = pytest.mark.anyio


class Reads:
    """A read that counts its calls and holds until ``release`` is set."""

    def __init__(self, answers: list[int]):
        self.answers = answers
        self.calls = 0
        self.started = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self) -> int:
        self.calls += 1
        self.started.set()
        with anyio.fail_after(5):
            await self.release.wait()
        return self.answers[self.calls - 1]


async def gather(remembered: Remembered[str, int], read: Reads, callers: int) -> list[int]:
    results: list[int] = []

    async def ask() -> None:
        results.append(await remembered.get("k", read))

    async with anyio.create_task_group() as tg:
        for _ in range(callers):
            tg.start_soon(ask)
        with anyio.fail_after(5):
            await read.started.wait()
        await anyio.wait_all_tasks_blocked()
        read.release.set()
    return results


async def test_callers_that_miss_at_once_share_one_read_and_the_answer_is_kept() -> None:
    remembered: Remembered[str, int] = Remembered()
    read = Reads([7])
    assert await gather(remembered, read, 20) == [7] * 20
    assert read.calls == 1
    assert await remembered.get("k", read) == 7
    assert read.calls == 1


async def test_a_write_during_the_read_is_not_remembered_and_later_callers_read_again() -> None:
    remembered: Remembered[str, int] = Remembered()
    read = Reads([1, 2])
    results: list[int] = []

    async def ask() -> None:
        results.append(await remembered.get("k", read))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        tg.start_soon(ask)
        with anyio.fail_after(5):
            await read.started.wait()
        await anyio.wait_all_tasks_blocked()
        remembered.forget()  # a write while the read runs
        read.release.set()
    assert results == [1, 1]  # both asked before the write ended
    assert await remembered.get("k", read) == 2
    assert read.calls == 2


async def test_learn_sets_one_answer_and_keeps_the_others() -> None:
    remembered: Remembered[str, int] = Remembered()

    async def zero() -> int:
        return 0

    assert await remembered.get("a", zero) == 0
    remembered.learn("b", 5)

    async def unexpected() -> int:
        raise AssertionError("read again")

    assert await remembered.get("a", unexpected) == 0
    assert await remembered.get("b", unexpected) == 5


async def test_when_the_shared_read_fails_each_waiting_caller_reads_for_itself() -> None:
    remembered: Remembered[str, int] = Remembered()
    release = anyio.Event()
    calls: list[str] = []
    outcomes: list[object] = []

    async def failing() -> int:
        calls.append("failing")
        with anyio.fail_after(5):
            await release.wait()
        raise StoreError("database is locked")

    async def working() -> int:
        calls.append("working")
        return 3

    async def lead() -> None:
        try:
            await remembered.get("k", failing)
        except StoreError as exc:
            outcomes.append(exc)

    async def follow() -> None:
        outcomes.append(await remembered.get("k", working))

    async with anyio.create_task_group() as tg:
        tg.start_soon(lead)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(follow)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert calls == ["failing", "working"]
    assert isinstance(outcomes[0], StoreError)
    assert outcomes[1] == 3
