"""Failover: which member a call tries next after an error, and how long it waits first.

A ``FailoverPolicy`` belongs to a profile (``failover:`` in profile.yml). One call makes at most ``attempts``
model calls. It goes through the members in the group's order (members whose breaker is open are skipped);
``unavailable`` and ``rate_limited`` errors move to the next member at once. When every member of the round
was tried and attempts remain, a new round starts after a backoff of ``backoff_ms`` doubling per round,
jittered (a seeded rng) and capped at ``backoff_cap_ms``; a member that said ``Retry-After`` is not retried
before that time (a wait longer than ``max_retry_after_seconds`` ends the call instead). So a single model that
answers 429 with ``Retry-After: 3`` is called again after 3 s.

``auth`` and ``bad_request`` errors surface at once, unless ``failover_on`` is ``any``: then the call moves
to the next member (never back to the one that refused). ``context_length`` never fails over: every member
would be sent the same too-long request; the caller compacts the context and calls again.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ishiki_host.errors import ModelError, ModelRateLimited

if TYPE_CHECKING:
    from ishiki_host.core.clock import Clock
    from ishiki_host.gateway.breaker import CircuitBreaker
    from ishiki_host.gateway.group import Candidate, MemberGroup

__all__ = ["Attempts", "FailoverPolicy"]

log = logging.getLogger("ishiki_host.gateway")

_TRANSIENT = frozenset({"unavailable", "rate_limited"})


@dataclass(frozen=True, slots=True)
class FailoverPolicy:
    """How one profile's calls retry and fail over (see the module docstring)."""

    attempts: int = 3
    backoff_ms: int = 500
    backoff_cap_ms: int = 8_000
    failover_on: Literal["unavailable", "any"] = "unavailable"
    max_retry_after_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("failover attempts must be at least 1")
        if self.failover_on not in ("unavailable", "any"):
            raise ValueError(f"failover_on must be 'unavailable' or 'any', not {self.failover_on!r}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> FailoverPolicy:
        """From a profile's ``failover`` mapping (``attempts``, ``backoff_ms``, ``backoff_cap_ms``, ``failover_on``,
        ``max_retry_after_seconds``); missing keys keep their defaults."""
        keys = ("attempts", "backoff_ms", "backoff_cap_ms", "failover_on", "max_retry_after_seconds")
        return cls(**{key: data[key] for key in keys if key in data})

    def backoff_seconds(self, round_number: int, rng: random.Random) -> float:
        """The wait before round ``round_number`` (1 = the first repeat): doubling, jittered to 50-100 %, capped."""
        base = float(min(self.backoff_cap_ms, self.backoff_ms * 2 ** (round_number - 1)))
        return base * (0.5 + 0.5 * rng.random()) / 1000


class Attempts:
    """The attempts of one call: ``next()`` gives the member to call (its breaker claimed), ``failed()`` the
    verdict; ``next()`` raises the error the call ends with."""

    def __init__(
        self,
        policy: FailoverPolicy,
        group: MemberGroup,
        breakers: Mapping[str, CircuitBreaker],
        clock: Clock,
        rng: random.Random,
    ):
        self.policy = policy
        self.group = group
        self.breakers = breakers
        self.clock = clock
        self.rng = rng
        self._order = group.order()
        self._queue: list[Candidate] = []
        self._made = 0
        self._round = -1
        self._last: ModelError | None = None
        self._excluded: set[str] = set()
        self._retry_at: dict[str, float] = {}

    async def next(self) -> str:
        """The next member to call, after any backoff; raises the last error when the call must end."""
        if self._last is not None and (self._made >= self.policy.attempts or not self._may_continue(self._last)):
            raise self._last
        while True:
            while self._queue:
                member, forced = self._queue.pop(0)
                if self.breakers[member].acquire(force=forced):
                    self._made += 1
                    return member
            await self._new_round()

    async def _new_round(self) -> None:
        self._round += 1
        order = [member for member in self._order if member not in self._excluded]
        self._queue = self.group.candidates(order) if order else []
        if not self._queue:
            assert self._last is not None  # the first round always has members
            raise self._last
        if self._made == 0:
            return  # nothing was called yet: no reason to wait
        wait = self.policy.backoff_seconds(self._round, self.rng)
        retry_at = self._retry_at.get(self._queue[0][0])
        if retry_at is not None:
            asked = retry_at - self.clock.monotonic()
            if asked > self.policy.max_retry_after_seconds:
                assert self._last is not None
                raise self._last
            wait = max(wait, asked)
        log.info("model %s: round %d of retries in %.2f s", self.group.name, self._round + 1, wait)
        await self.clock.sleep(wait)

    def _may_continue(self, error: ModelError) -> bool:
        if error.kind == "context_length":
            return False
        return error.kind in _TRANSIENT or self.policy.failover_on == "any"

    def failed(self, member: str, error: ModelError) -> None:
        """Record that ``member`` failed with ``error`` (its breaker is told by the caller)."""
        self._last = error
        if isinstance(error, ModelRateLimited) and error.retry_after is not None:
            self._retry_at[member] = self.clock.monotonic() + error.retry_after
        if error.kind not in _TRANSIENT:
            self._excluded.add(member)
            self._queue = [c for c in self._queue if c[0] != member]
        if self._made < self.policy.attempts and self._may_continue(error):
            following = self._queue[0][0] if self._queue else "a new round"
            log.info("model %s: %s failed (%s); trying %s", self.group.name, member, error.kind, following)
