"""Exponential back-off with jitter, drawn from an injected random source so tests can replay it (the same as
the Telegram channel's: the face has no back-off of its own)."""

from __future__ import annotations

from typing import Protocol

__all__ = ["Backoff", "RandomSource"]


class RandomSource(Protocol):
    """A source of uniform floats in [0, 1); ``random.Random`` is one. Seed it to replay the delays."""

    def random(self) -> float:
        """The next float in [0, 1)."""
        ...


class Backoff:
    """Delays ``initial·2ⁿ`` capped at ``maximum``, each scaled by a random factor in [0.5, 1).

    The jitter spreads the retries of many bots that lost the network at the same moment; the lower bound
    keeps a retry from hammering the server when the draw is small.
    """

    def __init__(self, rng: RandomSource, *, initial: float = 1.0, maximum: float = 60.0):
        if initial <= 0 or maximum < initial:
            raise ValueError(f"back-off needs 0 < initial <= maximum, got {initial} and {maximum}")
        self._rng = rng
        self.initial = initial
        self.maximum = maximum
        self.failures = 0

    def next_delay(self) -> float:
        """The wait before the next retry; each call counts one more failure."""
        ceiling = min(self.maximum, self.initial * 2.0 ** min(self.failures, 62))
        self.failures += 1
        return ceiling * (0.5 + 0.5 * self._rng.random())

    def reset(self) -> None:
        """A call succeeded: the next failure starts again from ``initial``."""
        self.failures = 0
