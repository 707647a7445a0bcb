"""Usage over time for charts: ``UsageRepo.series`` gives one point per hour and model, and ``usage_cost`` prices a
sum, a total or a point with the model's configured price."""

from __future__ import annotations

import pytest

from ishiki_host import (
    CallTotal,
    MemoryStore,
    ModelPrice,
    ModelsConfig,
    ModelSpec,
    ProviderConfig,
    UsagePoint,
    UsageSum,
    usage_cost,
)
from ishiki_host.errors import StoreError

pytestmark = pytest.mark.anyio

PRICE = ModelPrice(input=2.0, output=8.0)


async def test_one_point_per_hour_and_model_in_time_order(store: MemoryStore) -> None:
    usage = store.usage
    usage.note_call(("2025-03-01", 13), "ana", "telegram:bot", "hosted:big", input_tokens=100, output_tokens=10)
    usage.note_call(("2025-03-01", 13), "bob", "console:local", "hosted:big", input_tokens=50, output_tokens=5)
    usage.note_call(("2025-03-01", 13), "ana", "telegram:bot", "local:llama", failed=True)
    usage.note_call(("2025-03-01", 9), "ana", "telegram:bot", "local:llama", input_tokens=7, output_tokens=3)
    usage.note_call(("2025-02-28", 23), "ana", "", "local:llama", input_tokens=1)
    usage.note_call(("2025-03-02", 0), "ana", "", "local:llama", input_tokens=1)  # after the period
    await usage.flush()
    usage.note_call(("2025-03-01", 13), "ana", "telegram:bot", "hosted:big", input_tokens=1)  # series flushes it

    points = await usage.series("2025-02-28", "2025-03-01")
    assert points == [
        UsagePoint("2025-02-28", 23, "local:llama", UsageSum(1, 0, 1, 0)),
        UsagePoint("2025-03-01", 9, "local:llama", UsageSum(1, 0, 7, 3)),
        UsagePoint("2025-03-01", 13, "hosted:big", UsageSum(3, 0, 151, 15)),
        UsagePoint("2025-03-01", 13, "local:llama", UsageSum(1, 1, 0, 0)),
    ]
    only_bob = await usage.series("2025-03-01", "2025-03-01", profile="bob")
    assert only_bob == [UsagePoint("2025-03-01", 13, "hosted:big", UsageSum(1, 0, 50, 5))]
    assert await usage.series("2025-01-01", "2025-01-31") == []


async def test_the_series_adds_up_to_the_totals(store: MemoryStore) -> None:
    for hour in range(24):
        store.usage.note_call(("2025-03-01", hour), "ana", "", "hosted:big", input_tokens=hour, output_tokens=1)
    points = await store.usage.series("2025-03-01", "2025-03-01")
    totals = await store.usage.totals("2025-03-01", "2025-03-01")
    assert [p.hour for p in points] == list(range(24))
    assert sum((p.sum for p in points), UsageSum()) == totals.total == UsageSum(24, 0, 276, 24)


async def test_a_day_that_is_no_date_is_refused(store: MemoryStore) -> None:
    with pytest.raises(StoreError, match="YYYY-MM-DD, not '2025-3-1'"):
        await store.usage.series("2025-02-01", "2025-3-1")


async def test_points_and_totals_are_priced_by_their_model(store: MemoryStore) -> None:
    config = ModelsConfig(
        providers={"hosted": ProviderConfig("hosted", "x", models=(ModelSpec("big", price=PRICE), ModelSpec("free")))}
    )
    store.usage.note_call(("2025-03-01", 12), "ana", "", "hosted:big", input_tokens=500_000, output_tokens=250_000)
    store.usage.note_call(("2025-03-01", 12), "ana", "", "hosted:free", input_tokens=9, output_tokens=9)
    costs = {
        p.model: usage_cost(p, config.price(p.model)) for p in await store.usage.series("2025-03-01", "2025-03-01")
    }
    assert costs == {"hosted:big": 3.0, "hosted:free": None}
    totals = await store.usage.totals("2025-03-01", "2025-03-01")
    assert [usage_cost(call, config.price(call.model)) for call in totals.calls] == [3.0, None]


def test_usage_cost_takes_a_sum_a_total_or_a_point() -> None:
    counted = UsageSum(calls=2, failures=0, input_tokens=1_000_000, output_tokens=0)
    assert usage_cost(counted, PRICE) == 2.0
    assert usage_cost(CallTotal("ana", "", "hosted:big", counted), PRICE) == 2.0
    assert usage_cost(UsagePoint("2025-03-01", 0, "hosted:big", counted), PRICE) == 2.0
    assert usage_cost(counted, None) is None
    assert usage_cost(UsageSum(), PRICE) == 0.0
