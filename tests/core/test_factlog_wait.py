"""``FactLog.wait_appended``: a follower returns at once when a newer entry exists, once one is appended, and
once the log is closed."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ishiki_host.core.factlog import FactLog

pytestmark = pytest.mark.anyio

HANG = 10.0


def user(text: str) -> dict[str, object]:
    return {"role": "user", "parts": [{"type": "text", "text": text}]}


async def test_it_returns_at_once_when_a_newer_entry_exists(fact_log: FactLog) -> None:
    await fact_log.append("message", user("hi"), sync=False)
    with anyio.fail_after(HANG):
        await fact_log.wait_appended(0)


async def test_followers_wake_on_the_next_append_and_not_before(fact_log: FactLog) -> None:
    await fact_log.append("message", user("one"), sync=False)
    woken: list[int] = []

    async def follow() -> None:
        await fact_log.wait_appended(1)
        woken.append(fact_log.last_id)

    with anyio.fail_after(HANG):
        async with anyio.create_task_group() as tg:  # its end waits for both followers
            tg.start_soon(follow)
            tg.start_soon(follow)
            await anyio.wait_all_tasks_blocked()
            assert woken == []
            await fact_log.append_many([("message", user("two")), ("message", user("three"))], sync=False)
    assert woken == [3, 3]


async def test_a_follower_of_a_closed_log_returns(tmp_path: Path) -> None:
    log = await FactLog.open(tmp_path / "facts.jsonl")
    returned = anyio.Event()

    async def follow() -> None:
        await log.wait_appended(0)
        returned.set()

    with anyio.fail_after(HANG):
        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await anyio.wait_all_tasks_blocked()
            assert not returned.is_set()
            await log.close()
    assert returned.is_set()
    assert log.last_id == 0
    with anyio.fail_after(HANG):
        await log.wait_appended(0)  # already closed: at once
