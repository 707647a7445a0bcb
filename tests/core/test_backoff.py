"""``Backoff`` and ``jittered_delay``: doubling from ``initial``, capped, jittered in [0.5, 1), replayable."""

from __future__ import annotations

import random

import pytest

from ishiki_host import Backoff
from ishiki_host.core.backoff import jittered_delay


class Fixed:
    """A random source that always draws ``value``."""

    def __init__(self, value: float):
        self.value = value

    def random(self) -> float:
        return self.value


def test_delays_double_up_to_the_cap_and_reset_starts_again() -> None:
    backoff = Backoff(Fixed(0.999999), initial=1.0, maximum=10.0)
    delays = [round(backoff.next_delay(), 3) for _ in range(6)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    backoff.reset()
    assert round(backoff.next_delay(), 3) == 1.0


def test_the_jitter_keeps_at_least_half_of_the_delay() -> None:
    assert jittered_delay(3, Fixed(0.0), initial=1.0, maximum=60.0) == 4.0
    assert jittered_delay(10_000, Fixed(0.0)) == 30.0  # huge counts stay at the cap, no overflow
    assert jittered_delay(-1, Fixed(0.0)) == 0.5


def test_a_seeded_source_replays_the_same_delays() -> None:
    def delays() -> list[float]:
        backoff = Backoff(random.Random(7))
        return [backoff.next_delay() for _ in range(5)]

    assert delays() == delays()


@pytest.mark.parametrize(("initial", "maximum"), [(0.0, 1.0), (-1.0, 1.0), (5.0, 1.0)])
def test_bad_bounds_are_refused(initial: float, maximum: float) -> None:
    with pytest.raises(ValueError, match="0 < initial <= maximum"):
        Backoff(random.Random(0), initial=initial, maximum=maximum)
