"""Circuit breakers: one per group member (``provider:modelId``), shared by every group that lists it.

``closed`` (calls pass) → ``open`` after ``failure_threshold`` consecutive failures (calls skip the member) →
``half_open`` once ``cooldown_seconds`` have passed, when exactly one call may probe it → ``closed`` if that
probe succeeds, ``open`` again (a new cooldown) if it fails. Only failures that say the member is unhealthy
count (``unavailable``, ``rate_limited``, ``auth``); an answer of any other kind proves it is reachable.
Every state change is logged; ``status()`` is the snapshot ``ishiki models --json`` shows.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

from ishiki_host.config.models import CircuitBreakerConfig

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.errors import ModelError

__all__ = ["BreakerState", "CircuitBreaker", "counts_as_failure"]

log = logging.getLogger("ishiki_host.gateway")

BreakerState = Literal["closed", "open", "half_open"]
_UNHEALTHY = frozenset({"unavailable", "rate_limited", "auth"})


def counts_as_failure(error: ModelError) -> bool:
    """Whether an error says the member itself is unhealthy (rather than the request being wrong)."""
    return error.kind in _UNHEALTHY


class CircuitBreaker:
    """The breaker of one member; time comes from the injected clock."""

    def __init__(self, member: str, config: CircuitBreakerConfig, clock: Clock):
        self.member = member
        self.config = config
        self.clock = clock
        self._state: BreakerState = "closed"
        self._failures = 0
        self._opened_at: float | None = None
        self._probe_out = False
        self._last_error: str | None = None

    @property
    def state(self) -> BreakerState:
        """The current state (an open breaker whose cooldown has passed reads as ``half_open``)."""
        self._maybe_half_open()
        return self._state

    def _set(self, state: BreakerState, why: str) -> None:
        if state != self._state:
            level = logging.WARNING if state == "open" else logging.INFO
            log.log(level, "breaker %s: %s -> %s (%s)", self.member, self._state, state, why)
            self._state = state

    def _maybe_half_open(self) -> None:
        cooldown = self.config.cooldown_seconds
        if (
            self._state == "open"
            and self._opened_at is not None
            and self.clock.monotonic() - self._opened_at >= cooldown
        ):
            self._probe_out = False
            self._set("half_open", f"cooldown of {cooldown:g} s passed")

    def available(self) -> bool:
        """Whether a call may go to this member now (closed, or half-open with its probe not yet taken)."""
        state = self.state
        return state == "closed" or (state == "half_open" and not self._probe_out)

    def acquire(self, *, force: bool = False) -> bool:
        """Claim a call; in ``half_open`` only one claim (the probe) succeeds until it reports.

        ``force`` admits the call whatever the state (used when every member is open).
        """
        if self.state == "half_open" and not self._probe_out:
            self._probe_out = True
            return True
        return force or self._state == "closed"

    def release(self) -> None:
        """A claimed call ended without a verdict (cancelled): a probe slot becomes free again."""
        self._probe_out = False

    def record_success(self) -> None:
        """The member answered."""
        self._failures = 0
        self._probe_out = False
        self._set("closed", "a call succeeded")

    def record_failure(self, error: ModelError) -> None:
        """The member failed; unhealthy kinds move it toward ``open``."""
        if not counts_as_failure(error):
            self.record_success()
            return
        self._failures += 1
        self._last_error = f"{error.kind}: {error}"
        self._probe_out = False
        if self._state == "half_open" or self._failures >= self.config.failure_threshold:
            self._opened_at = self.clock.monotonic()
            why = "the probe failed" if self._state == "half_open" else f"{self._failures} failures in a row"
            self._set("open", f"{why}; last: {self._last_error}")

    def status(self) -> dict[str, Any]:
        """A JSON snapshot: state, consecutive failures, when a probe is allowed, the last error."""
        state = self.state
        retry_in = None
        if state == "open" and self._opened_at is not None:
            retry_in = max(0.0, self.config.cooldown_seconds - (self.clock.monotonic() - self._opened_at))
        return {
            "member": self.member,
            "state": state,
            "failures": self._failures,
            "probe_in_seconds": retry_in,
            "last_error": self._last_error,
        }
