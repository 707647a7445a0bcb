"""``Throttled``: a log line per burst of one kind of trouble, not one per request.

Anyone on the internet can post to a webhook: a flood of badly signed requests must not flood the log too. The
first of a kind is logged at once; while more come within ``every`` seconds they are only counted (and logged
at debug level), and the next line logged says how many there were since.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ishiki_host import Clock

__all__ = ["Throttled"]


class Throttled:
    """Logs each kind of trouble (``key``) at most once per ``every`` seconds of ``clock``."""

    def __init__(self, clock: Clock, logger: logging.Logger, *, every: float = 60.0):
        self._clock = clock
        self._logger = logger
        self._every = every
        self._last: dict[str, float] = {}
        self._quiet: dict[str, int] = {}

    def log(self, level: int, key: str, message: str, *args: Any) -> None:
        """Log ``message % args`` at ``level`` unless ``key`` was logged within the last ``every`` seconds."""
        now = self._clock.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < self._every:
            self._quiet[key] = self._quiet.get(key, 0) + 1
            self._logger.debug(message, *args)
            return
        self._last[key] = now
        quiet = self._quiet.pop(key, 0)
        suffix = f" ({quiet} more like it since the last line)" if quiet else ""
        self._logger.log(level, message + suffix, *args)
