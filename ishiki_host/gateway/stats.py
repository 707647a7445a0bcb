"""Per-member call statistics kept in memory: latency percentiles, errors by kind, calls and tokens.

The gateway notes every call record of a member in its ``MemberStats`` (``note``: a few additions and one
append to a bounded ring, nothing sorted); ``status()`` computes the percentiles when asked. Latency counts
successful calls only (a timeout's latency is the limit, not the model's speed), the last ``LATENCY_SAMPLES``
of them. A new gateway (``models.yaml`` changed) starts from zero.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ishiki_host.core.model import Usage

__all__ = ["LATENCY_SAMPLES", "MemberStats", "percentile"]

LATENCY_SAMPLES = 512
"""How many of a member's latest successful calls its latency percentiles are computed from."""


def percentile(ordered: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile (``fraction`` 0.5 for p50) of ascending ``ordered``; ``None`` when empty."""
    if not ordered:
        return None
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


class MemberStats:
    """The statistics of one ``provider:modelId`` member since its gateway was built."""

    __slots__ = ("_latencies", "calls", "errors", "input_tokens", "output_tokens")

    def __init__(self, samples: int = LATENCY_SAMPLES):
        self._latencies: deque[float] = deque(maxlen=samples)
        self.calls = 0
        self.errors: dict[str, int] = {}
        self.input_tokens = 0
        self.output_tokens = 0

    def note(self, latency_seconds: float, usage: Usage | None, error_kind: str | None) -> None:
        """Count one call: its latency when it succeeded, its ``ModelError.kind`` when it failed."""
        self.calls += 1
        if error_kind is not None:
            self.errors[error_kind] = self.errors.get(error_kind, 0) + 1
        else:
            self._latencies.append(latency_seconds)
        if usage is not None:
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens

    def status(self) -> dict[str, Json]:
        """``calls``, ``tokens`` (``input``, ``output``), ``errors`` by kind and ``latency`` (``p50``, ``p95`` in
        seconds, ``None`` before a success; ``samples``: how many calls they come from)."""
        ordered = sorted(self._latencies)
        p50, p95 = percentile(ordered, 0.5), percentile(ordered, 0.95)
        return {
            "calls": self.calls,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens},
            "errors": dict(sorted(self.errors.items())),
            "latency": {
                "p50": None if p50 is None else round(p50, 6),
                "p95": None if p95 is None else round(p95, 6),
                "samples": len(ordered),
            },
        }
