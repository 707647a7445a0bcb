"""``LinkStatus``: how the account's link is doing, for ``status()``, the logs and the waits of tests.

One line is logged per episode: a link lost (warning), the first failure of a run of failed attempts
(warning; the same trouble again is logged at debug level), a link up again (info, with how long it was
down), and the first refused connection of a burst (warning; the count is in ``refused``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

import anyio

if TYPE_CHECKING:
    from ishiki_host import Clock, Json

__all__ = ["LinkState", "LinkStatus"]

LinkState = Literal["connecting", "up", "down"]
_BURST_SECONDS = 60.0


class LinkStatus:
    """The state of one account's link (see the module docstring)."""

    def __init__(self, clock: Clock):
        self._clock = clock
        self.state: LinkState = "connecting"
        self.since = clock.now()
        self.error: str | None = None
        self.connects = 0
        self.refused = 0
        self.last_refusal: str | None = None
        self.malformed = 0
        self.heartbeats = 0
        self.last_up_for = 0.0
        self.reconnect_seconds: float | None = None
        self._down_at: float | None = None
        self._mono_up = clock.monotonic()
        self._trouble: str | None = None
        self._refused_at = -_BURST_SECONDS
        self._up = anyio.Event()

    def up(self, logger: logging.Logger | None = None, label: str = "") -> None:
        """A link is up."""
        now = self._clock.monotonic()
        if self._down_at is not None:
            self.reconnect_seconds = now - self._down_at
        if logger is not None:
            if self._down_at is not None:
                logger.info("onebot account %s: linked again after %.1f s", label, self.reconnect_seconds)
            else:
                logger.info("onebot account %s: linked", label)
        self.state, self.since, self.error, self._trouble, self._down_at = "up", self._clock.now(), None, None, None
        self._mono_up = now
        self.connects += 1
        self._up.set()

    def down(self, why: str, logger: logging.Logger | None = None, label: str = "") -> None:
        """The link went down (``why``)."""
        if self.state == "up":
            self.last_up_for = self._clock.monotonic() - self._mono_up
            self._down_at = self._clock.monotonic()
            if logger is not None:
                logger.warning("onebot account %s: link lost (%s); reconnecting", label, why)
        self.state, self.since, self.error = "down", self._clock.now(), why
        self._up = anyio.Event()

    def trouble(self, why: str, logger: logging.Logger, label: str) -> None:
        """An attempt to link failed (``why``): logged once per episode."""
        kind = why.partition(" (")[0]
        logger.log(logging.DEBUG if kind == self._trouble else logging.WARNING, "onebot account %s: %s", label, why)
        self._trouble = kind
        if self._down_at is None:
            self._down_at = self._clock.monotonic()
        self.state, self.error = "down", why

    def refuse(self, why: str, logger: logging.Logger, label: str) -> None:
        """A connection or post was refused (``why``): counted, logged once per burst."""
        self.refused += 1
        self.last_refusal = why
        now = self._clock.monotonic()
        level = logging.WARNING if now - self._refused_at >= _BURST_SECONDS else logging.DEBUG
        self._refused_at = now
        logger.log(level, "onebot account %s: refused %s (401; is access_token the same on both sides?)", label, why)

    def take_stable(self, seconds: float) -> bool:
        """Whether the last link stayed up ``seconds`` or more (then forgotten: asked once per drop)."""
        stable, self.last_up_for = self.last_up_for >= seconds, 0.0
        return stable

    async def until_up(self) -> None:
        """Return once a link is up."""
        await self._up.wait()

    def describe(self) -> dict[str, Json]:
        """``link``, ``since``, ``error``, ``connects``, ``reconnectSeconds``, ``refused``, ``lastRefusal``,
        ``malformed``, ``heartbeats``."""
        return {
            "link": self.state,
            "since": self.since,
            "error": self.error,
            "connects": self.connects,
            "reconnectSeconds": self.reconnect_seconds,
            "refused": self.refused,
            "lastRefusal": self.last_refusal,
            "malformed": self.malformed,
            "heartbeats": self.heartbeats,
        }
