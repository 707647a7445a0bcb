"""Model groups: the order in which a call tries a group's members.

``failover`` always starts from the first member; ``round-robin`` starts one further along on each call;
``random`` shuffles with a seeded ``random.Random`` (the group's ``seed``, else the gateway's), so a test (or
a replay) sees the same order. Members whose breaker refuses calls are left out of a round; when every
member's breaker refuses, all are offered anyway (better a likely failure than a certain one).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host.config.models import Strategy
    from ishiki_host.gateway.breaker import CircuitBreaker

__all__ = ["Candidate", "MemberGroup"]

Candidate = tuple[str, bool]
"""A member and whether it is offered although its breaker refuses (every member was refusing)."""


class MemberGroup:
    """The members of one model reference and how to order them."""

    def __init__(
        self,
        name: str,
        members: tuple[str, ...],
        breakers: Mapping[str, CircuitBreaker],
        strategy: Strategy = "failover",
        seed: int | None = None,
    ):
        self.name = name
        self.members = members
        self.strategy = strategy
        self._breakers = breakers
        self._rng = random.Random(seed)
        self._next = 0

    def order(self) -> list[str]:
        """The members in this call's order (advances round-robin and the random stream)."""
        members = list(self.members)
        if self.strategy == "round-robin" and members:
            start = self._next % len(members)
            self._next += 1
            return members[start:] + members[:start]
        if self.strategy == "random":
            self._rng.shuffle(members)
        return members

    def candidates(self, order: list[str]) -> list[Candidate]:
        """``order`` filtered by the breakers; all of ``order``, forced, when every breaker refuses."""
        available = [member for member in order if self._breakers[member].available()]
        if available:
            return [(member, False) for member in available]
        return [(member, True) for member in order]
