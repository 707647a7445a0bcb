"""Clock skew for ``ishiki doctor``: the ``Date`` header of the answers its other checks received.

Doctor makes no request of its own for this: ``DateRecorder`` wraps the HTTP transport of the model probes
(and of the public URL's check) and keeps each answer's ``Date`` with the local time it arrived. Answers from
a loopback address come from this machine's own clock and are left out; ``clock_finding`` compares the rest.
A ``Date`` has whole seconds, so a skew under a few seconds is noise; above ``SKEW_SECONDS`` signed requests
(webhook signatures, time-limited tokens) start to fail.
"""

from __future__ import annotations

import ipaddress
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx

from ishiki_host.channels.base import Finding

__all__ = ["SKEW_SECONDS", "DateRecorder", "DateSeen", "clock_finding"]

SKEW_SECONDS = 30.0
"""A skew above this is a warning."""


@dataclass(frozen=True, slots=True)
class DateSeen:
    """One answer's ``Date`` header (``date``, as sent), the server's ``host`` and the local ``received`` time."""

    host: str
    date: str
    received: float


class DateRecorder(httpx.AsyncBaseTransport):
    """An httpx transport that passes every request to ``inner`` and adds the answers' ``Date`` headers to
    ``seen`` (several recorders may share one list; each closes its own ``inner``)."""

    def __init__(
        self,
        seen: list[DateSeen],
        inner: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.inner = inner if inner is not None else httpx.AsyncHTTPTransport()
        self.seen = seen
        self._clock = clock
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through ``inner``; keep its answer's ``Date``."""
        response = await self.inner.handle_async_request(request)
        date = response.headers.get("date")
        if date:
            self.seen.append(DateSeen(request.url.host, date, self._clock()))
        return response

    async def aclose(self) -> None:
        """Close ``inner`` once (every client of a gateway shares one transport and closes it)."""
        if not self._closed:
            self._closed = True
            await self.inner.aclose()


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _skew(seen: DateSeen) -> float | None:
    """Local minus the server's time in seconds (``None`` for a ``Date`` that does not parse)."""
    try:
        server = parsedate_to_datetime(seen.date)
    except (TypeError, ValueError):
        return None
    if server.tzinfo is None:
        return None
    return seen.received - server.timestamp()


def clock_finding(seen: Sequence[DateSeen]) -> Finding:
    """The clock finding: the median skew against the remote servers that answered with a ``Date``."""
    remote = [(s.host, skew) for s in seen if not _loopback(s.host) and (skew := _skew(s)) is not None]
    if not remote:
        return Finding("ok", "clock", "not checked: no remote server answered with a Date header")
    skew = statistics.median(k for _, k in remote)
    hosts = ", ".join(sorted({h for h, _ in remote}))
    if abs(skew) > SKEW_SECONDS:
        way = "ahead of" if skew > 0 else "behind"
        return Finding(
            "warning",
            "clock",
            f"this machine's clock is {abs(skew):.0f} s {way} {hosts}",
            "sync it (`timedatectl set-ntp true`, or chrony/ntpd): signed webhooks and tokens fail when it drifts",
        )
    return Finding("ok", "clock", f"within {max(abs(skew), 1):.0f} s of {hosts}")
