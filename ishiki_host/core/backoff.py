"""Exponential back-off with jitter, drawn from an injected random source so that tests replay it.

The host restarts channels and host plugins with it (``jittered_delay``), and a channel retries its platform
with a ``Backoff`` (on the face, so that every plugin need not write its own). The jitter spreads the retries of
many bots that lost the network at the same moment; its lower bound of half the delay keeps a retry from
hammering the server when the draw is small.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Backoff", "RandomSource", "jittered_delay"]


class RandomSource(Protocol):
    """A source of uniform floats in [0, 1); ``random.Random`` is one. Seed it to replay the delays."""

    def random(self) -> float:
        """The next float in [0, 1)."""
        ...


def jittered_delay(failures: int, rng: RandomSource, *, initial: float = 1.0, maximum: float = 60.0) -> float:
    """The wait after ``failures`` failures in a row (0: after the first): ``initial·2ⁿ`` capped at ``maximum``,
    scaled by a random factor in [0.5, 1)."""
    ceiling = min(maximum, initial * 2.0 ** min(max(failures, 0), 62))
    return ceiling * (0.5 + 0.5 * rng.random())


class Backoff:
    """``jittered_delay`` that counts the failures itself: ``next_delay()`` after each, ``reset()`` after a
    success."""

    def __init__(self, rng: RandomSource, *, initial: float = 1.0, maximum: float = 60.0):
        if initial <= 0 or maximum < initial:
            raise ValueError(f"back-off needs 0 < initial <= maximum, got {initial} and {maximum}")
        self._rng = rng
        self.initial = initial
        self.maximum = maximum
        self.failures = 0

    def next_delay(self) -> float:
        """The wait before the next retry; each call counts one more failure."""
        delay = jittered_delay(self.failures, self._rng, initial=self.initial, maximum=self.maximum)
        self.failures += 1
        return delay

    def reset(self) -> None:
        """A call succeeded: the next failure starts again from ``initial``."""
        self.failures = 0
