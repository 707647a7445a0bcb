"""Circuit breakers under a fake clock, and the member order of each group strategy."""

from __future__ import annotations

import logging

import pytest

from ishiki_host.config.models import CircuitBreakerConfig
from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import (
    ContextLengthExceeded,
    ModelAuthError,
    ModelBadRequest,
    ModelRateLimited,
    ModelUnavailable,
)
from ishiki_host.gateway.breaker import CircuitBreaker
from ishiki_host.gateway.group import MemberGroup

DOWN = ModelUnavailable("down", model="p:m")


def breaker(clock: FakeClock, threshold: int = 3, cooldown: float = 60) -> CircuitBreaker:
    return CircuitBreaker("p:m", CircuitBreakerConfig(threshold, cooldown), clock)


@pytest.mark.anyio
async def test_closed_open_half_open_closed(fake_clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "ishiki_host.gateway")
    b = breaker(fake_clock)
    for _ in range(2):
        b.record_failure(DOWN)
    assert b.state == "closed"
    assert b.available()
    b.record_failure(DOWN)
    assert b.state == "open"
    assert not b.available()
    assert b.status()["probe_in_seconds"] == 60
    await fake_clock.advance(59)
    assert b.state == "open"
    assert b.status()["probe_in_seconds"] == pytest.approx(1)
    await fake_clock.advance(1)
    assert b.state == "half_open"
    assert b.available()
    assert b.acquire()  # the one probe
    assert not b.available()
    assert not b.acquire()
    b.record_success()
    assert b.state == "closed"
    assert b.status()["failures"] == 0
    messages = [r.getMessage() for r in caplog.records]
    assert any("closed -> open" in m and "3 failures in a row" in m for m in messages)
    assert any("open -> half_open" in m for m in messages)
    assert any("half_open -> closed" in m for m in messages)


@pytest.mark.anyio
async def test_failed_probe_reopens_for_a_new_cooldown(fake_clock: FakeClock) -> None:
    b = breaker(fake_clock, threshold=1, cooldown=10)
    b.record_failure(DOWN)
    await fake_clock.advance(10)
    assert b.acquire()
    b.record_failure(ModelRateLimited("429", model="p:m"))
    assert b.state == "open"
    await fake_clock.advance(9)
    assert b.state == "open"
    await fake_clock.advance(1)
    assert b.state == "half_open"
    assert b.status()["last_error"].startswith("rate_limited")


@pytest.mark.anyio
async def test_a_cancelled_probe_frees_the_slot(fake_clock: FakeClock) -> None:
    b = breaker(fake_clock, threshold=1, cooldown=1)
    b.record_failure(DOWN)
    await fake_clock.advance(1)
    assert b.acquire()
    assert not b.available()
    b.release()
    assert b.available()


def test_which_errors_count(fake_clock: FakeClock) -> None:
    b = breaker(fake_clock, threshold=2)
    b.record_failure(ModelAuthError("401", model="p:m"))
    b.record_failure(ModelBadRequest("400", model="p:m"))  # the member answered: counts as alive
    b.record_failure(ContextLengthExceeded("413", model="p:m"))
    assert b.state == "closed"
    assert b.status()["failures"] == 0
    b.record_failure(ModelAuthError("401", model="p:m"))
    b.record_failure(ModelAuthError("403", model="p:m"))
    assert b.state == "open"


def test_force_admits_an_open_member(fake_clock: FakeClock) -> None:
    b = breaker(fake_clock, threshold=1)
    b.record_failure(DOWN)
    assert not b.acquire()
    assert b.acquire(force=True)


def group(
    strategy: str, clock: FakeClock, seed: int | None = None, members: tuple[str, ...] = ("a:m", "b:m", "c:m")
) -> tuple[MemberGroup, dict[str, CircuitBreaker]]:
    breakers = {m: CircuitBreaker(m, CircuitBreakerConfig(1, 60), clock) for m in members}
    return MemberGroup("g", members, breakers, strategy, seed), breakers  # type: ignore[arg-type]


def test_failover_order_is_fixed(fake_clock: FakeClock) -> None:
    g, _ = group("failover", fake_clock)
    assert [g.order() for _ in range(3)] == [["a:m", "b:m", "c:m"]] * 3


def test_round_robin_rotates(fake_clock: FakeClock) -> None:
    g, _ = group("round-robin", fake_clock)
    assert [g.order()[0] for _ in range(4)] == ["a:m", "b:m", "c:m", "a:m"]
    assert g.order() == ["b:m", "c:m", "a:m"]


def test_random_is_seeded(fake_clock: FakeClock) -> None:
    g1, _ = group("random", fake_clock, seed=7)
    g2, _ = group("random", fake_clock, seed=7)
    orders1 = [g1.order() for _ in range(10)]
    assert orders1 == [g2.order() for _ in range(10)]
    assert len({tuple(o) for o in orders1}) > 1  # it does shuffle
    assert all(sorted(o) == ["a:m", "b:m", "c:m"] for o in orders1)


def test_open_members_are_skipped_and_all_offered_when_all_open(fake_clock: FakeClock) -> None:
    g, breakers = group("failover", fake_clock)
    breakers["a:m"].record_failure(DOWN)
    assert g.candidates(g.order()) == [("b:m", False), ("c:m", False)]
    breakers["b:m"].record_failure(DOWN)
    breakers["c:m"].record_failure(DOWN)
    assert g.candidates(g.order()) == [("a:m", True), ("b:m", True), ("c:m", True)]
