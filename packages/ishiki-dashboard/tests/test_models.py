"""The models page on a real host: providers and members from the gateway's report, the usage charts after a
turn, and no trace of the provider's API key."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ishiki_dashboard.charts import format_value
from ishiki_dashboard.pages import models

pytestmark = pytest.mark.anyio

API_KEY = "sk-test-SECRET-0123456789abcdef"
"""``conftest.API_KEY``, the provider's ``api_key`` (the root conftest.py shadows the module's name)."""


async def test_the_page_shows_members_and_usage_and_masks_the_api_key(dash: Any) -> None:
    delivery = await dash.th.channel().say("hello")
    with anyio.fail_after(20):
        await delivery.settled()
    page = await dash.client.get("/models?days=1")
    assert page.status_code == 200, page.text
    assert "fake:fake-model" in page.text
    assert "Breaker" in page.text
    assert page.text.count("<svg") == 2
    assert 'style="' not in page.text
    assert API_KEY not in page.text


async def test_every_period_renders_and_an_unknown_one_falls_back(dash: Any) -> None:
    for days in ("1", "7", "30", "lots"):
        page = await dash.client.get(f"/models?days={days}")
        assert page.status_code == 200
    assert "last 7 days" in page.text


def test_the_labels_of_a_day_are_hours_and_of_a_week_days() -> None:
    from datetime import date

    hours, keys = models.usage_labels(date(2025, 3, 1), date(2025, 3, 1), hourly=True)
    days, _ = models.usage_labels(date(2025, 3, 1), date(2025, 3, 7), hourly=False)
    assert (len(hours), hours[0], keys[-1]) == (24, "00:00", ("2025-03-01", 23))
    assert days == ["03-01", "03-02", "03-03", "03-04", "03-05", "03-06", "03-07"]


async def test_a_configured_price_gives_the_cost_of_the_calls(make_dash: Any) -> None:
    async with make_dash(price="{input: 1000000, output: 1000000, currency: EUR}") as dash:
        groups = dash.ctx.models().groups
        assert groups["default"].members == ("fake:fake-model",)
        delivery = await dash.th.channel().say("hello")
        with anyio.fail_after(20):
            await delivery.settled()
        page = await dash.client.get("/models?days=1")
        totals = await dash.ctx.services.memory.usage.totals("2000-01-01", "2999-12-31")
    calls = totals.calls_by("model")
    assert [model for model, _ in calls] == ["fake:fake-model"]
    used = calls[0][1]
    # a price of 1,000,000 a million tokens makes every token cost 1: the cost is the token count
    assert format_value(float(used.input_tokens + used.output_tokens), "EUR") in page.text
    assert "no price configured" not in page.text
    assert ">default<" in page.text  # the group, from models.yaml
