"""``UsageRecorder``: model calls counted for the runtime they were made for, tools from turn reports, the
hour in the host's time zone, and a background write only once ``FLUSH_SECONDS`` have passed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import Usage
from ishiki_host.core.turns import TurnOutcome
from ishiki_host.gateway.attribution import in_runtime
from ishiki_host.gateway.gateway import ModelCallRecord
from ishiki_host.jsontypes import Json
from ishiki_host.observe import FLUSH_SECONDS, UsageRecorder
from ishiki_host.plugins.runtime_api import TurnReport
from ishiki_host.store import MemoryStore

pytestmark = pytest.mark.anyio

KEY = RuntimeKey.for_channel("ana", "telegram:bot", "private:42")


class Runtime:
    """What the gateway's attribution needs of a runtime."""

    key = KEY

    def record_usage(self, data: dict[str, Json]) -> None:
        pass


def record(tokens: tuple[int, int] | None = (100, 10), error: str | None = None) -> ModelCallRecord:
    usage = Usage(*tokens) if tokens is not None else None
    return ModelCallRecord("default", "fake:m", "interactive", False, 0.2, usage, error)


def report(*tools: str) -> TurnReport:
    outcome = TurnOutcome(1, "done", "sent")
    return TurnReport(1, "done", "sent", None, (), (), outcome, tools=tools)


async def rows(store: MemoryStore, table: str) -> list[tuple[object, ...]]:
    return await store.db.read(lambda conn: [tuple(r) for r in conn.execute(f"SELECT * FROM {table}")])


def recorder_for(
    store: MemoryStore | None, clock: FakeClock, zone: str = "UTC"
) -> tuple[UsageRecorder, list[Callable[[], Awaitable[object]]]]:
    spawned: list[Callable[[], Awaitable[object]]] = []
    recorder = UsageRecorder(
        lambda: store.usage if store is not None else None, clock, lambda: zone, lambda fn, name: spawned.append(fn)
    )
    return recorder, spawned


async def test_calls_count_for_their_runtime_and_tools_for_the_turn(store: MemoryStore, fake_clock: FakeClock) -> None:
    recorder, spawned = recorder_for(store, fake_clock, "Asia/Tokyo")  # 2023-11-14 22:13 UTC is 07:13 the 15th
    with in_runtime(Runtime()):
        recorder.model_call(record())
        recorder.model_call(record(None, "auth"))
    recorder.model_call(record((5, 1)))  # outside any runtime: no profile, no channel
    recorder.turn_ended(KEY, report("send_message", "memory_search", "send_message"))
    await recorder.flush()
    assert sorted(await rows(store, "usage_calls")) == [
        ("2023-11-15", 7, "", "", "fake:m", 1, 0, 5, 1),
        ("2023-11-15", 7, "ana", "telegram:bot", "fake:m", 2, 1, 100, 10),
    ]
    assert sorted(await rows(store, "usage_tools")) == [
        ("2023-11-15", 7, "ana", "telegram:bot", "memory_search", 1),
        ("2023-11-15", 7, "ana", "telegram:bot", "send_message", 2),
    ]
    assert spawned == []


async def test_a_background_write_comes_only_once_the_interval_has_passed(
    store: MemoryStore, fake_clock: FakeClock
) -> None:
    recorder, spawned = recorder_for(store, fake_clock)
    recorder.flush_soon()
    recorder.model_call(record())
    recorder.flush_soon()
    assert spawned == []  # counted, but the last write (the start) is too recent
    await fake_clock.advance(FLUSH_SECONDS)
    recorder.flush_soon()
    recorder.flush_soon()  # one is under way: no second
    assert len(spawned) == 1
    await spawned[0]()
    assert len(await rows(store, "usage_calls")) == 1
    assert store.usage.pending == 0
    await fake_clock.advance(FLUSH_SECONDS)
    recorder.flush_soon()
    assert len(spawned) == 1  # nothing new to write


async def test_without_a_memory_database_nothing_is_counted(fake_clock: FakeClock) -> None:
    recorder, spawned = recorder_for(None, fake_clock)
    recorder.model_call(record())
    recorder.turn_ended(KEY, report("send_message"))
    await fake_clock.advance(FLUSH_SECONDS)
    recorder.flush_soon()
    await recorder.flush()
    assert spawned == []
