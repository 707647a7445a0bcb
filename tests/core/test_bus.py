"""The event bus: order, wildcards, unsubscribing, failing and slow handlers."""

from __future__ import annotations

import logging

import anyio
import pytest

from ishiki_host.core.bus import BusEvent, EventBus


@pytest.mark.anyio
async def test_handlers_run_in_subscription_order_sync_or_async() -> None:
    bus = EventBus()
    seen: list[str] = []

    async def later(event: BusEvent) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(f"async:{event['n']}")

    bus.subscribe("tick", lambda event: seen.append(f"sync:{event['n']}"))
    bus.subscribe("*", lambda event: seen.append(f"star:{event.name}"))
    bus.subscribe("tick", later)
    bus.subscribe("tock", lambda event: seen.append("tock"))
    await bus.emit("tick", n=1)
    assert seen == ["sync:1", "star:tick", "async:1"]


@pytest.mark.anyio
async def test_unsubscribe_stops_delivery_and_is_idempotent() -> None:
    bus = EventBus()
    seen: list[BusEvent] = []
    unsubscribe = bus.subscribe("x", seen.append)
    await bus.emit("x")
    unsubscribe()
    unsubscribe()
    await bus.emit("x")
    assert [e.name for e in seen] == ["x"]


@pytest.mark.anyio
async def test_a_failing_handler_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    seen: list[str] = []

    def broken(event: BusEvent) -> None:
        raise RuntimeError("handler bug")

    bus.subscribe("x", broken)
    bus.subscribe("x", lambda event: seen.append("after"))
    with caplog.at_level(logging.ERROR):
        await bus.emit("x")
    assert seen == ["after"]
    assert "handler bug" in caplog.text


@pytest.mark.anyio
async def test_a_handler_that_overruns_is_cut_off(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus(handler_timeout=0.01)
    seen: list[str] = []

    async def stuck(event: BusEvent) -> None:
        await anyio.sleep_forever()

    bus.subscribe("x", stuck)
    bus.subscribe("x", lambda event: seen.append("after"))
    with caplog.at_level(logging.ERROR), anyio.fail_after(10):
        await bus.emit("x")
    assert seen == ["after"]
    assert "overran" in caplog.text


@pytest.mark.anyio
async def test_handlers_run_phase_by_phase_whoever_subscribed_first() -> None:
    bus = EventBus()
    seen: list[str] = []
    bus.subscribe("turn.done", lambda e: seen.append("close"), phase="close")
    bus.subscribe("turn.done", lambda e: seen.append("react 1"))
    bus.subscribe("*", lambda e: seen.append("react 2 (every event)"))
    bus.subscribe("turn.done", lambda e: seen.append("track"), phase="track")
    await bus.emit("turn.done")
    assert seen == ["track", "react 1", "react 2 (every event)", "close"]


def test_an_unknown_phase_is_refused() -> None:
    with pytest.raises(ValueError, match="bus phase must be one of track, react, close; got 'first'"):
        EventBus().subscribe("turn.done", lambda e: None, phase="first")  # type: ignore[arg-type]
